"""An agent CLI's own session, kept across the attempts of one task.

A CLI run that dies mid-session (a provider failure the retries could not absorb, a
timeout, a crash) has done part of the work, and the CLI saved the conversation so far in
its home. The engine gives every attempt of a CLI task the same private home
(``SessionPlan.home``, under the run's folder), so the next attempt can continue that
conversation (``SessionPlan.resume_id``, with the short ``SessionPlan.prompt``) instead
of starting from the task's prompt.

An attempt's adapter writes what it learned of its session into ``session.json`` in the
attempt's output folder (``write_session_record``) while the CLI runs, each time the
session's id or its answers change, and once more when the run has ended: the
CLI's session id, how many model answers the run saw, whether the run continued an
earlier session, and whether a resume was refused by the CLI (the session was not found).
``read_session_record`` reads it back.

The task's settings (``AgentRequest.config``, any CLI adapter) that steer this:

* ``workspace_snapshot`` (default ``true``): snapshot the workspace before the first
  attempt and restore it before any later attempt that does not continue a session;
* ``resume_session`` (default ``true``): continue the CLI's session where the CLI can;
* ``snapshot_max_bytes``: the most file content a snapshot copies (default 1 GiB);
* ``continue_prompt``: what a resumed session is told (default ``"continue"``).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

from backstay._checks import check_number
from backstay.errors import ConfigError

__all__ = [
    "CONTINUE_PROMPT",
    "SESSION_FILE",
    "SESSION_KEYS",
    "SessionOptions",
    "SessionPlan",
    "SessionRecord",
    "parse_session_options",
    "read_session_record",
    "write_session_record",
]

CONTINUE_PROMPT: Final = "continue"
SESSION_FILE: Final = "session.json"
SESSION_KEYS: Final = frozenset(
    {"workspace_snapshot", "resume_session", "snapshot_max_bytes", "continue_prompt"}
)
_DEFAULT_MAX_BYTES: Final = 1 << 30


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SessionOptions:
    """The task's settings for snapshots and resumed sessions (module docstring)."""

    workspace_snapshot: bool = True
    resume_session: bool = True
    snapshot_max_bytes: int = _DEFAULT_MAX_BYTES
    continue_prompt: str = CONTINUE_PROMPT


def parse_session_options(config: Mapping[str, Any]) -> SessionOptions:
    """The options in ``config``; ``ConfigError`` naming the key."""
    for key in ("workspace_snapshot", "resume_session"):
        value = config.get(key, True)
        if not isinstance(value, bool):
            raise ConfigError(f"must be true or false, got {value!r}", where=f"config.{key}")
    limit = config.get("snapshot_max_bytes", _DEFAULT_MAX_BYTES)
    check_number(limit, where="config.snapshot_max_bytes", minimum=1, integer=True)
    prompt = config.get("continue_prompt", CONTINUE_PROMPT)
    if not isinstance(prompt, str) or not prompt.strip():
        raise ConfigError(
            f"must be a non-empty text, got {prompt!r}", where="config.continue_prompt"
        )
    return SessionOptions(
        workspace_snapshot=config.get("workspace_snapshot", True),
        resume_session=config.get("resume_session", True),
        snapshot_max_bytes=int(limit),
        continue_prompt=prompt,
    )


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SessionPlan:
    """How an attempt runs its CLI's session: in the private home ``home``, kept across
    the task's attempts; continuing the session ``resume_id`` with ``prompt`` (``None``:
    a new session from the task's prompt). When the CLI refuses to continue it (the
    session is not found), ``restart`` puts the workspace back for a fresh start in the
    same attempt and says whether it could (``None``: it cannot; the attempt fails)."""

    home: Path
    resume_id: str | None = None
    prompt: str = CONTINUE_PROMPT
    restart: Callable[[], bool] | None = dataclasses.field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.home, Path):
            raise ConfigError(f"must be a path, got {self.home!r}", where="session.home")
        if self.resume_id is not None and (
            not isinstance(self.resume_id, str) or not self.resume_id
        ):
            raise ConfigError(f"must be a session id, got {self.resume_id!r}", where="session")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SessionRecord:
    """What one attempt learned of its CLI's session (``session.json``): its id, how many
    answers of the model the run saw (``turns``), whether it continued an earlier session,
    and whether the CLI refused to continue one."""

    agent: str
    session_id: str | None = None
    turns: int = 0
    resumed: bool = False
    resume_refused: bool = False


def write_session_record(output_dir: Path, record: SessionRecord) -> None:
    """Write ``record`` to ``output_dir/session.json`` (0600, replaced atomically)."""
    output_dir.mkdir(parents=True, exist_ok=True)
    path = output_dir / SESSION_FILE
    partial = path.with_name(f".{SESSION_FILE}.partial")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(dataclasses.asdict(record), out)
    partial.replace(path)


def read_session_record(output_dir: Path) -> SessionRecord | None:
    """The record in ``output_dir/session.json``; ``None`` without a readable one."""
    try:
        data = json.loads((output_dir / SESSION_FILE).read_text(encoding="utf-8"))
        record = SessionRecord(**data)
    except (OSError, ValueError, TypeError):
        return None
    session_id: object = record.session_id
    if session_id is not None and not isinstance(session_id, str):
        return None
    return record
