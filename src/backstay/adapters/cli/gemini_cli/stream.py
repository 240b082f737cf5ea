"""Reading Gemini CLI's ``--output-format stream-json`` stdout, and its session file.

stdout is one JSON event per line: ``init``, ``message`` (the user's prompt; the
assistant's text in ``delta`` pieces), ``tool_use``, ``tool_result``, ``error`` and a final
``result`` (``status`` ``success`` or ``error``, ``stats`` with token counts).
``GeminiStream.line`` keeps the result and writes the story into ``agent.log``: assistant
text once its pieces are complete, each tool call and result, each error event. It also
keeps the session's id (``init``'s ``session_id``) and counts the model's answers: a run
of assistant text and tool calls with no tool result or other event between them.

The stream says nothing about model calls, so ``session_usage`` reads the session
transcript the CLI keeps under its ``HOME`` (``.gemini/tmp/<project>/chats/
session-*.jsonl``): one ``gemini`` message per model call, rewritten as it grows, each
with its ``tokens`` (``input`` includes ``cached``; ``output`` and ``thoughts`` are both
generated tokens).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator, Mapping
from pathlib import Path
from typing import Any, Final

from backstay.adapters.capture import Capture
from backstay.adapters.cli.claude_code.stream import one_line
from backstay.adapters.usage import Usage

__all__ = [
    "SESSION_GLOB",
    "GeminiStream",
    "result_usage",
    "session_calls",
    "session_usage",
]

SESSION_GLOB: Final = ".gemini/tmp/*/chats/session-*.jsonl"


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


class GeminiStream:
    """Fed stdout line by line (``run_process``'s ``on_stdout_line``)."""

    def __init__(self, capture: Capture) -> None:
        self._capture = capture
        self._text: list[str] = []
        self._answer: list[str] = []
        self.result: dict[str, Any] | None = None
        self.session_id: str | None = None
        self.answers = 0  # the model's answers the stream showed
        self._answering = False

    @property
    def answer(self) -> str:
        """Everything the assistant wrote, in order."""
        return "".join(self._answer)

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
        answering = kind == "tool_use" or (kind == "message" and event.get("role") == "assistant")
        if answering and not self._answering:
            self.answers += 1
        self._answering = answering
        if kind == "message" and event.get("role") == "assistant":
            piece = str(event.get("content", ""))
            self._text.append(piece)
            self._answer.append(piece)
            return
        self.flush()
        if kind == "init":
            said = event.get("session_id")
            if isinstance(said, str) and said:
                self.session_id = said
            self._log(
                f"gemini-cli session {event.get('session_id')} started: model {event.get('model')}"
            )
        elif kind == "tool_use":
            self._log(
                f"tool call {event.get('tool_name')}: {one_line(event.get('parameters', {}))}"
            )
        elif kind == "tool_result":
            said = event.get("output") or event.get("error") or ""
            self._log(f"tool result ({event.get('status')}): {one_line(said)}")
        elif kind == "error":
            self._log(
                f"gemini-cli {event.get('severity', 'error')}: {one_line(event.get('message', ''))}"
            )
        elif kind == "result":
            self.result = event
            error = event.get("error")
            said = one_line(error.get("message", "")) if isinstance(error, Mapping) else ""
            self._log(f"gemini-cli result: {event.get('status')} {said}".rstrip())

    def flush(self) -> None:
        """Log the assistant text gathered so far (the stream ended, or moved on)."""
        text = "".join(self._text)
        self._text.clear()
        if text.strip():
            self._log(f"assistant: {one_line(text)}")

    def _log(self, message: str) -> None:
        self._capture.log(message)


def result_usage(result: Mapping[str, Any]) -> Usage:
    """The tokens a ``result`` event's ``stats`` report (model calls unknown: 0)."""
    stats = result.get("stats")
    counts: Mapping[str, Any] = stats if isinstance(stats, Mapping) else {}
    cached = _count(counts.get("cached"))
    return Usage(
        input_tokens=max(0, _count(counts.get("input_tokens")) - cached),
        output_tokens=_count(counts.get("output_tokens")),
        cache_read_tokens=cached,
    )


def _records(path: Path) -> Iterator[Mapping[str, Any]]:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, Mapping):
            continue
        replaced = record.get("$set")
        if isinstance(replaced, Mapping) and isinstance(replaced.get("messages"), list):
            yield from (m for m in replaced["messages"] if isinstance(m, Mapping))
        else:
            yield record


def _session_calls(home: Path) -> dict[str, Mapping[str, Any]]:
    """The tokens of each model call the session transcripts under ``home`` record, by
    transcript and message id (a message's last version counting)."""
    calls: dict[str, Mapping[str, Any]] = {}
    for path in sorted(home.glob(SESSION_GLOB)):
        for record in _records(path):
            tokens = record.get("tokens")
            if record.get("type") == "gemini" and isinstance(tokens, Mapping):
                calls[f"{path}:{record.get('id')}"] = tokens
    return calls


def session_calls(home: Path) -> frozenset[str]:
    """The model calls the session transcripts under ``home`` record now (``session_usage``
    leaves them out as ``before``: a kept home holds the calls of earlier attempts)."""
    return frozenset(_session_calls(home))


def session_usage(home: Path, *, before: Collection[str] = ()) -> Usage | None:
    """The usage the session transcripts under ``home`` record (one model call per
    ``gemini`` message, its last version counting), the calls in ``before`` left out;
    ``None`` when there is none."""
    calls = {key: t for key, t in _session_calls(home).items() if key not in before}
    if not calls:
        return None
    cached = sum(_count(t.get("cached")) for t in calls.values())
    prompt = sum(_count(t.get("input")) for t in calls.values())
    return Usage(
        input_tokens=max(0, prompt - cached),
        output_tokens=sum(
            _count(t.get("output")) + _count(t.get("thoughts")) for t in calls.values()
        ),
        cache_read_tokens=cached,
        api_calls=len(calls),
    )
