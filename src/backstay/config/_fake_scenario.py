"""Fake-provider scenarios from YAML files and ``--fault`` flags → frozen ``Scenario`` and
``Fault`` objects (docs/fake-provider.md). Every problem is collected and reported at once,
each with its file and line (or flag) and key path."""

from __future__ import annotations

import os
import pathlib
from collections.abc import Callable
from typing import Any, Final

import yaml

from backstay.config._document import Document
from backstay.config._fields import describe_value, suggestion
from backstay.config._load import read_file
from backstay.config._paths import Path
from backstay.config._sections import mapping, unknown_key
from backstay.config._source import Source, SourceKind
from backstay.errors import ConfigError
from backstay.fakeprovider.faults import Fault, FaultKind, Outage
from backstay.fakeprovider.scenario import RateLimit, Reply, Scenario, ToolCall
from backstay.fakeprovider.session import Session, Turn

TOP_LEVEL: Final = ("seed", "reply", "session", "rate_limit", "sequence", "faults")
FAULT_KEYS: Final = (
    "fault",
    "api",
    "model",
    "first",
    "requests",
    "probability",
    "outage",
    "turn",
    "times",
    "retry_after_s",
    "after_events",
    "delay_s",
)
OUTAGE_KEYS: Final = ("duration_s", "start_s", "start_request")
_OK: Final = "ok"


def _build(doc: Document, path: Path, factory: Callable[..., Any], **fields: Any) -> Any:
    """``factory(**fields)``, or ``None`` and a problem at the field its check names."""
    try:
        return factory(**fields)
    except ConfigError as err:
        field = (err.where or "").rpartition(".")[2]
        at = (*path, field) if field in fields else path
        doc.problem(at, err.reason)
        return None


def _outage(doc: Document, path: Path, raw: object) -> Outage | None:
    body = mapping(doc, path, raw, "duration_s and start_s or start_request")
    if body is None:
        return None
    for key in body:
        if key not in OUTAGE_KEYS:
            unknown_key(doc, path, key, OUTAGE_KEYS)
    if "duration_s" not in body:
        doc.problem(path, "needs duration_s")
        return None
    given = {k: v for k, v in body.items() if k in OUTAGE_KEYS}
    built: Outage | None = _build(doc, path, Outage, **given)
    return built


def fault(
    doc: Document, path: Path, raw: object, *, requests: tuple[int, ...] = ()
) -> Fault | None:
    """One fault mapping (or a bare fault name); ``requests`` preset for sequence entries."""
    if isinstance(raw, str):
        raw = {"fault": raw}
    body = mapping(doc, path, raw, "fault settings")
    if body is None:
        return None
    fields: dict[str, Any] = {}
    for key, value in body.items():
        if key not in FAULT_KEYS or (
            requests and key in {"first", "requests", "probability", "outage", "turn", "times"}
        ):
            unknown_key(doc, path, key, [k for k in FAULT_KEYS if not requests or k != "requests"])
        else:
            fields[key] = value
    name = fields.pop("fault", None)
    if name is None:
        doc.problem((*path, "fault"), f"is required: one of {', '.join(FaultKind)}")
        return None
    if name not in tuple(FaultKind):
        doc.problem(
            (*path, "fault"),
            f"unknown fault {describe_value(name)}{suggestion(name, [str(k) for k in FaultKind])}; "
            f"known: {', '.join(FaultKind)}",
        )
        return None
    if "requests" in fields:
        numbers = fields["requests"]
        if not isinstance(numbers, list):
            doc.problem(
                (*path, "requests"),
                f"must be a list of request numbers, got {describe_value(numbers)}",
            )
            return None
        fields["requests"] = tuple(numbers)
    if requests:
        fields["requests"] = requests
    if "outage" in fields:
        fields["outage"] = _outage(doc, (*path, "outage"), fields["outage"])
        if fields["outage"] is None:
            return None
    built: Fault | None = _build(doc, path, Fault, kind=FaultKind(name), **fields)
    return built


def _sequence(doc: Document, raw: object) -> list[Fault]:
    if not isinstance(raw, list):
        doc.problem(("sequence",), f"must be a list of faults or 'ok', got {describe_value(raw)}")
        return []
    out = []
    for index, item in enumerate(raw):
        if item == _OK:
            continue
        built = fault(doc, ("sequence", f"[{index}]"), item, requests=(index + 1,))
        if built is not None:
            out.append(built)
    return out


def _reply(doc: Document, raw: object) -> Reply:
    body = mapping(doc, ("reply",), raw, "text and tool_call") or {}
    for key in body:
        if key not in ("text", "tool_call"):
            unknown_key(doc, ("reply",), key, ("text", "tool_call"))
    tool = None
    if body.get("tool_call") is not None:
        path: Path = ("reply", "tool_call")
        call = mapping(doc, path, body["tool_call"], "name and arguments") or {}
        for key in call:
            if key not in ("name", "arguments"):
                unknown_key(doc, path, key, ("name", "arguments"))
        arguments = call.get("arguments", {})
        tool = _build(doc, path, ToolCall, name=call.get("name"), arguments=arguments)
    text = body.get("text")
    if text is not None and not isinstance(text, str):
        doc.problem(("reply", "text"), f"must be a string, got {describe_value(text)}")
        text = None
    return Reply(text=text, tool_call=tool)


def _session(doc: Document, raw: object) -> Session | None:
    """``session: {turns: [{shell: …}, …], final: …}``."""
    body = mapping(doc, ("session",), raw, "turns and final")
    if body is None:
        return None
    for key in body:
        if key not in ("turns", "final"):
            unknown_key(doc, ("session",), key, ("turns", "final"))
    raw_turns = body.get("turns")
    if not isinstance(raw_turns, list) or not raw_turns:
        doc.problem(
            ("session", "turns"),
            f"must be a non-empty list of {{shell: COMMAND}}, got {describe_value(raw_turns)}",
        )
        return None
    turns = []
    for index, item in enumerate(raw_turns):
        path: Path = ("session", "turns", f"[{index}]")
        turn = mapping(doc, path, item, "shell")
        if turn is None:
            continue
        for key in turn:
            if key != "shell":
                unknown_key(doc, path, key, ("shell",))
        built = _build(doc, path, Turn, shell=turn.get("shell"))
        if built is not None:
            turns.append(built)
    if len(turns) != len(raw_turns):
        return None
    fields = {"final": body["final"]} if "final" in body else {}
    session: Session | None = _build(doc, ("session",), Session, turns=tuple(turns), **fields)
    return session


def _rate_limit(doc: Document, raw: object) -> RateLimit | None:
    keys = ("requests_per_minute", "tokens_per_minute")
    body = mapping(doc, ("rate_limit",), raw, "requests_per_minute and tokens_per_minute")
    if not body:
        return None
    for key in body:
        if key not in keys:
            unknown_key(doc, ("rate_limit",), key, keys)
    built: RateLimit | None = _build(
        doc, ("rate_limit",), RateLimit, **{k: v for k, v in body.items() if k in keys}
    )
    return built


def scenario_from(doc: Document, data: object) -> Scenario | None:
    """The scenario in ``data`` (a mapping as read from YAML); problems go to ``doc``."""
    if data is None:
        return Scenario()
    if not isinstance(data, dict):
        doc.problem((), f"must be a mapping of {', '.join(TOP_LEVEL)}, got {describe_value(data)}")
        return None
    for key in data:
        if key not in TOP_LEVEL:
            unknown_key(doc, (), key, TOP_LEVEL)
    faults = _sequence(doc, data["sequence"]) if "sequence" in data else []
    raw_faults = data.get("faults") or []
    if not isinstance(raw_faults, list):
        doc.problem(("faults",), f"must be a list of faults, got {describe_value(raw_faults)}")
        raw_faults = []
    for index, item in enumerate(raw_faults):
        built = fault(doc, ("faults", f"[{index}]"), item)
        if built is not None:
            faults.append(built)
    reply = _reply(doc, data.get("reply"))
    session = _session(doc, data["session"]) if data.get("session") is not None else None
    limit = _rate_limit(doc, data.get("rate_limit"))
    seed = data.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        doc.problem(("seed",), f"must be a whole number, got {describe_value(seed)}")
        seed = 0
    if doc.problems:
        return None
    return Scenario(faults=tuple(faults), reply=reply, session=session, rate_limit=limit, seed=seed)


def load_scenario(path: str | os.PathLike[str]) -> Scenario:
    """Read and check the scenario file ``path``: one ``ConfigError`` lists every
    problem with its file, line and key path."""
    file = pathlib.Path(path)
    doc = Document(name=str(file))
    data = read_file(file, doc)
    built = None if doc.problems else scenario_from(doc, data)
    if built is None:
        raise doc.error()
    return built


def _flag_value(text: str) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def parse_fault(spec: str) -> Fault:
    """A fault from ``KIND[:key=value]…`` as ``--fault`` takes it: ``requests=1,3`` lists
    request numbers; ``outage_s=5`` with ``start_s=10`` or ``start_request=3`` is an
    outage window. Raises ``ConfigError`` naming the flag."""
    where = f"--fault {spec}"
    doc = Document(name=where)
    source = Source(SourceKind.CLI, where)
    kind, *options = spec.split(":")
    raw: dict[str, Any] = {"fault": kind.strip()}
    outage: dict[str, Any] = {}
    for option in options:
        key, sep, value = option.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"expected key=value, got {option!r}", where=where)
        if key == "requests":
            raw[key] = [_flag_value(v) for v in value.split(",")]
        elif key == "outage_s":
            outage["duration_s"] = _flag_value(value)
        elif key in ("start_s", "start_request"):
            outage[key] = _flag_value(value)
        else:
            raw[key] = _flag_value(value)
        doc.sources[(key,)] = source
    if outage:
        raw["outage"] = outage
    built = fault(doc, (), raw)
    if built is None or doc.problems:
        raise doc.error()
    return built
