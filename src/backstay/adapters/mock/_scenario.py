"""``Scenario``: what ``MockAdapter``'s agent does on each attempt, validated up front.

A scenario is a mapping (or a YAML / JSON file holding one) with ``attempts``: a list
with one list of steps per attempt; attempts past the last repeat the last. Each step is
a mapping with exactly one action key, and that action's options::

    attempts:
      - - print: "working"                  # a stdout line (repeat: N for many)
        - error: rate_limit                 # Claude Code's 429 result, exit 1
          retry_after_s: 30
      - - write_file: out/answer.txt        # relative to the workspace
          text: "42"
        - result: "done"                    # Claude Code's success result
          input_tokens: 120
          output_tokens: 40
          cost_usd: 0.002

Actions: ``print``, ``stderr``, ``echo_prompt``, ``print_env``, ``write_file``, ``sleep``,
``spawn`` (a grandchild sleeping N s), ``ignore_sigterm``, ``stall`` (a partial stream
event, then silence), ``hang`` (silence), ``result``, ``error`` (one of
``_agent.ERRORS``) and ``exit``. Errors name the step: ``scenario.attempts[1][0].sleep``.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any, Final

import yaml

from backstay.adapters.mock._agent import ERRORS
from backstay.errors import ConfigError

_USAGE: Final = {
    "input_tokens": int,
    "output_tokens": int,
    "cache_read_tokens": int,
    "cache_write_tokens": int,
    "cost_usd": float,
    "num_turns": int,
}
# action → {option: type}; the action's own key is listed first.
_ACTIONS: Final[Mapping[str, Mapping[str, type]]] = {
    "print": {"print": str, "repeat": int},
    "stderr": {"stderr": str, "repeat": int},
    "echo_prompt": {"echo_prompt": bool},
    "print_env": {"print_env": str},
    "write_file": {"write_file": str, "text": str},
    "sleep": {"sleep": float},
    "spawn": {"spawn": float},
    "ignore_sigterm": {"ignore_sigterm": bool},
    "stall": {"stall": str},
    "hang": {"hang": bool},
    "result": {"result": str, **_USAGE},
    "error": {"error": str, "retry_after_s": float, "resets_at": str, "message": str, **_USAGE},
    "exit": {"exit": int},
}
# One attempt's steps travel as one command-line argument (Linux caps one at 128 KiB).
MAX_STEPS_CHARS: Final = 100_000


def _check_value(value: object, kind: type, where: str) -> None:
    if kind is bool:
        if value is not True:
            raise ConfigError(f"must be true, got {value!r}", where=where)
        return
    if kind is str:
        if not isinstance(value, str):
            raise ConfigError(f"must be a string, got {value!r}", where=where)
        return
    if (
        not isinstance(value, int | float)
        or isinstance(value, bool)
        or (kind is int and not isinstance(value, int))
    ):
        raise ConfigError(f"must be a {kind.__name__} number, got {value!r}", where=where)
    if not math.isfinite(value) or value < 0:
        raise ConfigError(f"must be a finite number >= 0, got {value!r}", where=where)


def _resets_epoch(value: object, where: str) -> int:
    """``resets_at`` as epoch seconds: given so, or as an ISO-8601 time with its zone."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, _dt.datetime | str):
        try:
            moment = value if isinstance(value, _dt.datetime) else _dt.datetime.fromisoformat(value)
        except ValueError:
            moment = None
        if moment is not None and moment.tzinfo is not None:
            return int(moment.timestamp())
    raise ConfigError(f"must be epoch seconds or ISO-8601 with a zone, got {value!r}", where=where)


def _step(raw: object, where: str) -> dict[str, Any]:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"must be a mapping with one action, got {raw!r}", where=where)
    actions = [key for key in raw if key in _ACTIONS]
    if len(actions) != 1:
        found = ", ".join(map(str, actions)) or "none"
        raise ConfigError(
            f"needs exactly one action of {', '.join(_ACTIONS)} (found {found})", where=where
        )
    action = actions[0]
    options = _ACTIONS[action]
    step: dict[str, Any] = {}
    for key, value in raw.items():
        at = f"{where}.{key}"
        if key not in options:
            raise ConfigError(f"is not an option of {action!r} ({', '.join(options)})", where=at)
        if key == "resets_at":
            step[key] = _resets_epoch(value, at)
            continue
        _check_value(value, options[key], at)
        step[key] = value
    if action == "error" and step["error"] not in ERRORS:
        raise ConfigError(f"must be one of {', '.join(ERRORS)}", where=f"{where}.error")
    if action == "exit" and step["exit"] > 255:
        raise ConfigError("must be an exit code 0..255", where=f"{where}.exit")
    if action == "write_file":
        path = PurePosixPath(step["write_file"])
        if not step["write_file"] or path.is_absolute() or ".." in path.parts:
            raise ConfigError("must be a path inside the workspace", where=f"{where}.write_file")
    return step


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Scenario:
    """Validated steps per attempt (JSON-ready mappings, as the agent program reads them)."""

    attempts: tuple[tuple[Mapping[str, Any], ...], ...]

    @classmethod
    def from_data(cls, data: object, *, where: str = "scenario") -> Scenario:
        if not isinstance(data, Mapping) or set(data) != {"attempts"}:
            raise ConfigError("must be a mapping with one key, attempts", where=where)
        raw = data["attempts"]
        if isinstance(raw, str | bytes) or not isinstance(raw, Sequence) or not raw:
            raise ConfigError("must be a non-empty list of step lists", where=f"{where}.attempts")
        attempts = []
        for i, steps in enumerate(raw):
            at = f"{where}.attempts[{i}]"
            if isinstance(steps, str | bytes) or not isinstance(steps, Sequence):
                raise ConfigError(f"must be a list of steps, got {steps!r}", where=at)
            attempts.append(tuple(_step(s, f"{at}[{j}]") for j, s in enumerate(steps)))
            if len(json.dumps(attempts[-1])) > MAX_STEPS_CHARS:
                raise ConfigError("is too large for a command line; use repeat", where=at)
        return cls(attempts=tuple(attempts))

    @classmethod
    def load(cls, source: object, *, where: str = "scenario") -> Scenario:
        """From a ``Scenario``, a mapping, or the path of a YAML or JSON file."""
        if isinstance(source, Scenario):
            return source
        if isinstance(source, str | Path):
            try:
                text = Path(source).read_text(encoding="utf-8")
                data = yaml.safe_load(text)
            except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
                raise ConfigError(f"cannot read {str(source)!r}: {exc}", where=where) from exc
            return cls.from_data(data, where=where)
        return cls.from_data(source, where=where)

    def steps_for(self, attempt: int) -> list[Mapping[str, Any]]:
        """The steps of ``attempt`` (1-based); attempts past the last repeat the last."""
        index = min(max(attempt, 1), len(self.attempts)) - 1
        return list(self.attempts[index])
