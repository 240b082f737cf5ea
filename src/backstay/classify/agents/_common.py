"""What every agent CLI classifier shares: reading JSON output, and text → ``Failure``."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import re
from collections.abc import Mapping
from typing import Any

from backstay.classify._bounds import bounded
from backstay.classify._decide import build_failure
from backstay.classify._evidence import named_status, read_evidence
from backstay.classify._patterns import match_transport
from backstay.failure import Failure

_MAX_OBJECTS = 50_000


_DECODER = json.JSONDecoder()


def _scan(text: str) -> tuple[list[dict[str, Any]], str]:
    """JSON objects that start a line (one whole object, JSON lines, or pretty-printed
    objects among other output), and the text outside them."""
    found: list[dict[str, Any]] = []
    outside: list[str] = []
    pos = last = 0
    length = len(text)
    while pos < length and len(found) < _MAX_OBJECTS:
        start = text.find("{", pos)
        if start == -1:
            break
        line_start = text.rfind("\n", 0, start) + 1
        if text[line_start:start].strip():
            pos = start + 1  # a brace inside a line of prose is not a JSON document
            continue
        try:
            value, end = _DECODER.raw_decode(text, start)
        except (ValueError, RecursionError):  # RecursionError: nested too deep to read
            pos = start + 1
            continue
        if isinstance(value, dict):
            found.append(value)
            outside.append(text[last:start])
            last = end
        pos = end
    outside.append(text[last:])
    return found, "".join(outside)


def json_objects(text: str) -> list[dict[str, Any]]:
    """The JSON objects in ``text`` (see ``_scan``)."""
    return _scan(text)[0]


def outside_json(text: str) -> str:
    """The text around the JSON objects: in a JSON stream mode, what the CLI printed on its
    own (stderr, crash reports), as opposed to the transcript of the agent's work."""
    return _scan(text)[1].strip()


def no_error_event(
    agent: str, text: str, family: str | None, *, exit_code: int | None, now: _dt.datetime
) -> Failure:
    """A JSON-stream run that failed without an error event: only text the CLI printed
    outside the stream counts as evidence, never the agent's own transcript (which may
    discuss rate limits or logins as its subject matter)."""
    message = outside_json(text)[-4000:]
    if not message:
        return coded(
            "ERR_AGENT_FAILED",
            f"{agent} exited with {exit_code} without an error event",
            agent=agent,
            family=family,
            exit_code=exit_code,
            why=f"exit code {exit_code} and no error event in the stream",
        )
    return from_text(
        message,
        agent=agent,
        family=family,
        now=now,
        exit_code=exit_code,
    )


def status_from_text(text: str) -> int | None:
    """An HTTP status an agent wrote into its message, if it wrote one."""
    return named_status(text)


def from_text(
    message: str,
    *,
    agent: str,
    family: str | None,
    status: int | None = None,
    headers: Mapping[str, str] | None = None,
    body: object = None,
    now: _dt.datetime,
    exit_code: int | None = None,
) -> Failure:
    """Classify an agent's error text (with any provider body it embeds).

    Without a ``status``, one written in the text is used ("API Error: 529 …"). When
    neither provider evidence, a status, nor transport words decide, the agent failed for
    a reason we cannot name: ``ERR_AGENT_FAILED``.
    """
    if status is None:
        status = status_from_text(message)
    ev = read_evidence(status, headers, body if body is not None else message, provider=family)
    if not ev.message or (body is None and not ev.has_error_shape):
        ev.message = message
    elif message != ev.message:
        ev.extra.setdefault("raw", message)  # the agent's own words around the provider body
    failure = build_failure(ev, now=now)
    source = failure.details.get("source")
    if source in ("nothing", "error_shape"):
        code = match_transport(message) or "ERR_AGENT_FAILED"
        why = "transport words in the output" if code != "ERR_AGENT_FAILED" else ""
        details = {"source": source, "evidence": why or "the output names no cause"}
        failure = Failure(code=code, message=bounded(message), provider=family, details=details)
    return with_agent(failure, agent, exit_code)


def with_agent(failure: Failure, agent: str, exit_code: int | None) -> Failure:
    """``failure`` with the agent and its exit code recorded in ``details``."""
    details = {**failure.details, "agent": agent}
    if exit_code is not None:
        details["exit_code"] = exit_code
    return dataclasses.replace(failure, details=details)


def coded(
    code: str,
    message: str,
    *,
    agent: str,
    family: str | None,
    exit_code: int | None,
    why: str = "a field of the agent's own output",
) -> Failure:
    details = {"source": "agent_field", "evidence": why}
    return with_agent(
        Failure(code=code, message=message, provider=family, details=details), agent, exit_code
    )


_ERROR_LINE = re.compile(r"(?im)^[^\w\n]*error when talking to \S")


def unanswered(
    text: str, agent: str, family: str | None, *, exit_code: int | None, now: _dt.datetime
) -> Failure | None:
    """A run that ended as if it succeeded but gave no answer: nothing printed at all, or
    the CLI's own "Error when talking to …" line among its last words. ``None`` otherwise."""
    stripped = text.strip()
    if not stripped:
        return coded(
            "ERR_AGENT_FAILED",
            f"{agent} printed nothing",
            agent=agent,
            family=family,
            exit_code=exit_code,
            why="the run printed nothing: no answer",
        )
    if _ERROR_LINE.search(stripped[-2000:]):
        return from_text(stripped[-4000:], agent=agent, family=family, now=now, exit_code=exit_code)
    return None
