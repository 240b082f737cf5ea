"""Reading ``codex exec --json``: its event stream, and the rollout file of the run.

stdout carries one JSON event a line: ``thread.started``, ``turn.started``,
``item.started`` / ``item.completed`` (``agent_message``, ``reasoning``,
``command_execution``, ``file_change``, ``mcp_tool_call``, ``web_search``, ``todo_list``,
``error``), then ``turn.completed`` with the turn's ``usage`` or ``turn.failed``.
``usage.input_tokens`` counts cached tokens too (OpenAI's convention): the uncached part
is ``input_tokens - cached_input_tokens``. Codex reports no cost, and no count of model
calls: the rollout (``$CODEX_HOME/sessions/…/rollout-*.jsonl``) has one ``token_count``
event per completed model call.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

from backstay.adapters.usage import Usage

_SHOWN_CHARS: Final = 500


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _short(text: object) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= _SHOWN_CHARS else line[:_SHOWN_CHARS] + " …"


def turn_usage(usage: Mapping[str, Any]) -> Usage:
    """A ``turn.completed.usage`` object as ``Usage`` (uncached input apart)."""
    cached = _count(usage.get("cached_input_tokens"))
    written = _count(usage.get("cache_write_input_tokens"))
    return Usage(
        input_tokens=max(0, _count(usage.get("input_tokens")) - cached - written),
        output_tokens=_count(usage.get("output_tokens")),
        cache_read_tokens=cached,
        cache_write_tokens=written,
    )


def _describe(item: Mapping[str, Any]) -> str | None:
    """One readable line for a completed item."""
    kind = item.get("type")
    if kind == "agent_message":
        return f"message: {_short(item.get('text', ''))}"
    if kind == "reasoning":
        return f"reasoning: {_short(item.get('text', ''))}"
    if kind == "command_execution":
        return f"command {_short(item.get('command', ''))} exited {item.get('exit_code')}"
    if kind == "file_change":
        changes = item.get("changes")
        files = [
            f"{c.get('kind', '?')} {c.get('path', '?')}"
            for c in (changes if isinstance(changes, list) else [])
            if isinstance(c, Mapping)
        ]
        return f"file change: {', '.join(files) or '?'}"
    if kind == "mcp_tool_call":
        return f"tool {item.get('server', '?')}.{item.get('tool', '?')}: {item.get('status')}"
    if kind == "web_search":
        return f"web search: {_short(item.get('query', ''))}"
    if kind == "error":
        return f"notice: {_short(item.get('message', ''))}"
    return None


class EventReader:
    """Fed stdout line by line; logs each event readably through ``log`` and keeps the
    answer (the last agent message) and the usage of the completed turns."""

    __slots__ = ("_log", "answer", "answers", "failed", "thread_id", "turns", "usage")

    def __init__(self, log: Callable[[str], None]) -> None:
        self._log = log
        self.answer = ""
        self.usage = Usage()
        self.turns = 0
        self.failed = False
        # The session (``thread.started``) and the items the model produced in it.
        self.thread_id: str | None = None
        self.answers = 0

    def line(self, text: str) -> None:
        text = text.strip()
        if not text.startswith("{"):
            return
        try:
            event = json.loads(text)
        except ValueError:
            return
        if isinstance(event, dict):
            self._event(event)

    def _event(self, event: Mapping[str, Any]) -> None:
        kind = event.get("type")
        if kind == "thread.started" and isinstance(event.get("thread_id"), str):
            self.thread_id = event["thread_id"] or None
        if kind == "item.completed" and isinstance(event.get("item"), Mapping):
            item = event["item"]
            if item.get("type") != "error":
                self.answers += 1
            if item.get("type") == "agent_message" and isinstance(item.get("text"), str):
                self.answer = item["text"]
            described = _describe(item)
            if described is not None:
                self._log(f"codex {described}")
        elif kind == "turn.completed":
            usage = event.get("usage")
            turn = turn_usage(usage if isinstance(usage, Mapping) else {})
            self.usage = self.usage + turn
            self.turns += 1
            self._log(
                f"codex turn completed: {turn.prompt_tokens} prompt tokens "
                f"({turn.cache_read_tokens} cached), {turn.output_tokens} output tokens"
            )
        elif kind == "turn.failed":
            self.failed = True
            error = event.get("error")
            message = error.get("message") if isinstance(error, Mapping) else None
            self._log(f"codex turn failed: {_short(message or '?')}")
        elif kind == "error":
            self._log(f"codex error: {_short(event.get('message', ''))}")


def rollout_calls(codex_home: Path) -> int | None:
    """The model calls the rollouts under ``codex_home`` record (one ``token_count``
    event with usage per completed call); ``None`` when there is no rollout."""
    files = sorted((codex_home / "sessions").glob("**/rollout-*.jsonl"))
    if not files:
        return None
    calls = 0
    for path in files:
        with path.open(encoding="utf-8", errors="replace") as lines:
            for line in lines:
                if '"token_count"' not in line:
                    continue
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                payload = record.get("payload") if isinstance(record, dict) else None
                if (
                    isinstance(payload, dict)
                    and payload.get("type") == "token_count"
                    and isinstance(payload.get("info"), dict)
                    and isinstance(payload["info"].get("last_token_usage"), dict)
                ):
                    calls += 1
    return calls
