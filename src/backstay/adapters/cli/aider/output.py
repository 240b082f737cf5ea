"""Reading an Aider attempt: its output as it streams, and the logs it leaves behind.

* ``LineWatch`` (the ``on_stdout_line`` callback) counts Aider's own retries — a
  "Retrying in 0.5 seconds..." line after a ``litellm.<Error>`` line — and sets ``stop``
  when Aider announces one more than the attempt may make. It also notes each usage line
  ("Tokens: 914 sent, 18 received." with or without "Cost: …") and whether the last one
  was followed by "has hit a token limit", and the files Aider says it edited.
* ``read_report`` reads the analytics events Aider logged to a local file (exact token
  counts and cost of each answered call, ``message_send``; how Aider ended, ``exit``) and
  its LLM history (one "TO LLM" entry per API call; the last reply's text).

Aider prints its usage lines rounded ("1.2k sent"): the numbers come from the events. A
context-window refusal still gets a usage line and event, holding Aider's own estimate of
a prompt the provider never answered (nothing received): that one is not counted.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import re
from pathlib import Path
from typing import Any, Final

from backstay.adapters.cli.aider.command import AiderFiles

__all__ = ["AiderReport", "LineWatch", "read_report"]

_ERROR: Final = re.compile(r"^litellm\.[A-Za-z]\w*")
_RETRY: Final = re.compile(r"^Retrying in \d+(?:\.\d+)? seconds\.\.\.$")
_TOKENS: Final = re.compile(r"^Tokens: \S+ sent\b.*\breceived\.")
_TOKEN_LIMIT: Final = re.compile(r"has hit a token limit!$")
_APPLIED: Final = re.compile(r"^Applied edit to (.+)$")
_SENT: Final = re.compile(r"^TO LLM \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$")
_RESPONSE: Final = re.compile(r"^LLM RESPONSE \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$")
_REPLY_PREFIX: Final = "ASSISTANT "
COMPLETED_PREFIX: Final = "Completed --message"


class LineWatch:
    """Fed Aider's stdout line by line; see the module docstring."""

    def __init__(self, *, allowed_retries: int, stop: asyncio.Event) -> None:
        self.allowed_retries = allowed_retries
        self.stop = stop
        self.retries = 0
        # One entry per usage line: whether it carried Aider's cost.
        self.priced: list[bool] = []
        self.exhausted = False
        self.edited: list[str] = []
        self._error_pending = False

    @property
    def stopped_at_retry(self) -> bool:
        """Whether the watch asked for the run to stop (a retry past the allowance)."""
        return self.stop.is_set()

    def line(self, text: str) -> None:
        text = text.strip()
        if _ERROR.match(text):
            self._error_pending = True
        elif self._error_pending and _RETRY.match(text):
            self._error_pending = False
            self.retries += 1
            if self.retries > self.allowed_retries:
                self.stop.set()
        elif _TOKENS.match(text):
            self.priced.append("Cost:" in text)
            self.exhausted = False
            self._error_pending = False
        elif _TOKEN_LIMIT.search(text):
            self.exhausted = True
        elif (match := _APPLIED.match(text)) and match.group(1) not in self.edited:
            self.edited.append(match.group(1))


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class AiderReport:
    """What an attempt's logs say. ``cost_usd`` is Aider's own total, ``None`` when it
    printed no cost for some answer (a model litellm has no price for). ``exit_reason``
    is the reason of Aider's ``exit`` event ("Completed --message-file"), ``None`` when
    it logged none (killed, or crashed)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    answers: int = 0
    api_calls: int = 0
    reply: str = ""
    exit_reason: str | None = None
    exception: str | None = None

    @property
    def completed(self) -> bool:
        """Whether Aider says it finished the message it was given."""
        return self.exit_reason is not None and self.exit_reason.startswith(COMPLETED_PREFIX)


def _events(path: Path) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return events
    for line in lines:
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and isinstance(value.get("properties"), dict):
            events.append(value)
    return events


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _cost(value: object) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return max(0.0, float(value))
    return 0.0


def _history(path: Path) -> tuple[int, str]:
    """The number of API calls and the last non-empty reply in Aider's LLM history."""
    calls = 0
    reply: list[str] = []
    last = ""
    in_reply = False
    try:
        file = path.open(encoding="utf-8", errors="replace")
    except OSError:
        return 0, ""
    with file:
        for raw in file:
            line = raw.rstrip("\n")
            if _SENT.match(line):
                calls += 1
                in_reply = False
            elif _RESPONSE.match(line):
                if "".join(reply).strip():
                    last = "\n".join(reply)
                reply, in_reply = [], True
            elif in_reply and line.startswith(_REPLY_PREFIX[:-1]):
                reply.append(line[len(_REPLY_PREFIX) :])
    if "".join(reply).strip():
        last = "\n".join(reply)
    return calls, last


def read_report(files: AiderFiles, watch: LineWatch) -> AiderReport:
    """The attempt's usage and ending, from the files Aider wrote (see the module)."""
    events = _events(files.analytics)
    sends = [e["properties"] for e in events if e.get("event") == "message_send"]
    if watch.exhausted and sends and _count(sends[-1].get("completion_tokens")) == 0:
        sends.pop()  # a context-window refusal: Aider's estimate of an unanswered prompt
    exits = [e["properties"] for e in events if e.get("event") == "exit"]
    reason = exits[-1].get("reason") if exits else None
    failures = [e["properties"] for e in events if e.get("event") == "message_send_exception"]
    exception = failures[-1].get("exception") if failures else None
    priced = watch.priced[: len(sends)]
    cost = None
    if sends and len(priced) == len(sends) and all(priced):
        cost = sum(_cost(s.get("cost")) for s in sends)
    calls, reply = _history(files.llm_history)
    return AiderReport(
        prompt_tokens=sum(_count(s.get("prompt_tokens")) for s in sends),
        completion_tokens=sum(_count(s.get("completion_tokens")) for s in sends),
        cost_usd=cost,
        answers=len(sends),
        api_calls=calls,
        reply=reply,
        exit_reason=reason if isinstance(reason, str) else None,
        exception=exception if isinstance(exception, str) else None,
    )
