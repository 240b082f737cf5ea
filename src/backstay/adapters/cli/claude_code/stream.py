"""Reading Claude Code's ``--output-format stream-json --verbose`` stdout as it arrives.

Each line is one JSON event. ``ClaudeStream.line`` keeps the final ``result`` object (the
only one whose usage is complete, see ``claude_code._json``) and writes the run's story into
``agent.log``, one line per event: the session start, each assistant text and tool call,
each tool result, the CLI's own retries (``api_retry``) and the result. Partial-message
events (``stream_event``, from ``--include-partial-messages``) only prove the stream is
alive: they are not logged. Lines that are not JSON are ignored (they stay in
``stdout.log``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from backstay.adapters.capture import Capture
from backstay.adapters.cli.claude_code._json import ResultReader

__all__ = ["LOG_TEXT_CHARS", "ClaudeStream", "one_line"]

# The longest text of one agent.log entry (a message, a tool call's input, a tool result).
LOG_TEXT_CHARS: Final = 400
# The model Claude Code names on the messages it writes itself (an API error's text).
SYNTHETIC_MODEL: Final = "<synthetic>"


def one_line(value: object, limit: int = LOG_TEXT_CHARS) -> str:
    """``value`` as one short line: JSON for structures, newlines folded, cut at ``limit``."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= limit else f"{text[: limit - 1]}…"


def _blocks(message: object) -> list[Mapping[str, Any]]:
    content = message.get("content") if isinstance(message, Mapping) else None
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        return []
    return [block for block in content if isinstance(block, Mapping)]


class ClaudeStream:
    """Fed stdout line by line (``run_process``'s ``on_stdout_line``)."""

    def __init__(self, capture: Capture) -> None:
        self._capture = capture
        self._reader = ResultReader()
        self.retries = 0
        # The session's id, from the first event that names one (``system`` ``init``).
        self.session_id: str | None = None
        # The ids of the model's answers seen (one per turn; a message streams in parts).
        self.answers: set[str] = set()

    @property
    def result(self) -> dict[str, Any] | None:
        """The final ``result`` object, once it arrived."""
        return self._reader.result

    def line(self, text: str) -> None:
        stripped = text.strip()
        if not stripped.startswith("{"):
            return
        try:
            event = json.loads(stripped)
        except ValueError:
            return
        if not isinstance(event, dict):
            return
        kind = event.get("type")
        if self.session_id is None and isinstance(event.get("session_id"), str):
            self.session_id = event["session_id"] or None
        if kind == "result":
            self._reader.line(stripped)
            self._result(event)
        elif kind == "system":
            self._system(event)
        elif kind == "assistant":
            self._assistant(event)
        elif kind == "user":
            self._user(event)

    def _log(self, message: str) -> None:
        self._capture.log(message)

    def _system(self, event: Mapping[str, Any]) -> None:
        subtype = event.get("subtype")
        if subtype == "init":
            tools = event.get("tools")
            count = len(tools) if isinstance(tools, list) else 0
            self._log(
                f"claude-code session {event.get('session_id')} started: model "
                f"{event.get('model')}, {count} tools, permission mode "
                f"{event.get('permissionMode')}"
            )
        elif subtype == "api_retry":
            self.retries += 1
            self._log(
                f"claude-code retried by itself: attempt {event.get('attempt')} of "
                f"{event.get('max_retries')} after status {event.get('error_status')} "
                f"({event.get('error')}), waiting {event.get('retry_delay_ms')} ms"
            )

    def _assistant(self, event: Mapping[str, Any]) -> None:
        message = event.get("message")
        if (
            isinstance(message, Mapping)
            and isinstance(message.get("id"), str)
            and message.get("model") != SYNTHETIC_MODEL
        ):
            self.answers.add(message["id"])
        for block in _blocks(event.get("message")):
            kind = block.get("type")
            if kind == "text" and str(block.get("text", "")).strip():
                self._log(f"assistant: {one_line(block.get('text'))}")
            elif kind == "tool_use":
                self._log(f"tool call {block.get('name')}: {one_line(block.get('input', {}))}")

    def _user(self, event: Mapping[str, Any]) -> None:
        for block in _blocks(event.get("message")):
            if block.get("type") != "tool_result":
                continue
            content = block.get("content")
            if isinstance(content, list):
                content = " ".join(
                    str(part.get("text", "")) for part in content if isinstance(part, Mapping)
                )
            status = "error" if block.get("is_error") else "ok"
            self._log(f"tool result ({status}): {one_line(content or '')}")

    def _result(self, event: Mapping[str, Any]) -> None:
        self._log(
            f"claude-code result: {event.get('subtype')}, is_error {event.get('is_error')}, "
            f"{event.get('num_turns')} turns, api_error_status {event.get('api_error_status')}, "
            f"terminal_reason {event.get('terminal_reason')}"
        )
