"""Session memory: the messages of a conversation, kept per tenant and session.

``MemoryManager`` is the protocol (store a message, a context window within a token
budget, summarise the history, clear a session); ``InMemoryMemory`` keeps messages in the
process, ``SQLiteMemory`` (``backstay.store.sqlite.runtime_memory``) in a file. Every
method takes the tenant: one tenant never sees another's messages. Message contents are
redacted before they are stored (``SensitiveRedactor``), so memory never holds a secret
or a card number.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

from backstay._checks import check_name, check_number

__all__ = [
    "InMemoryMemory",
    "MemoryManager",
    "Message",
    "SessionMemory",
    "Summarizer",
    "estimate_tokens",
    "fit_window",
    "plain_summary",
]


def estimate_tokens(text: str) -> int:
    """A cheap estimate: one token per started four characters."""
    return math.ceil(len(text) / 4) if text else 0


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Message:
    """One message: ``role`` (user, assistant, tool, system, summary) and its text."""

    role: str
    content: str
    tokens: int = -1

    def __post_init__(self) -> None:
        check_name(self.role, where="message.role")
        if not isinstance(self.content, str):
            raise TypeError("message.content must be a string")
        if self.tokens < 0:
            object.__setattr__(self, "tokens", estimate_tokens(self.content))


Summarizer = Callable[[Sequence[Message]], str]


def plain_summary(messages: Sequence[Message]) -> str:
    """The default summariser: the first line of each message, role first, trimmed."""
    lines = [f"{m.role}: {m.content.splitlines()[0][:120]}" for m in messages if m.content]
    return "Earlier: " + " | ".join(lines)


def fit_window(messages: Sequence[Message], budget_tokens: int) -> tuple[Message, ...]:
    """The newest messages whose tokens fit ``budget_tokens``, oldest first; a summary
    message at the start of the history is kept first whenever it fits."""
    check_number(budget_tokens, where="budget_tokens", integer=True)
    head: list[Message] = []
    rest = list(messages)
    if rest and rest[0].role == "summary" and rest[0].tokens <= budget_tokens:
        head = [rest.pop(0)]
        budget_tokens -= head[0].tokens
    kept: list[Message] = []
    for message in reversed(rest):
        if message.tokens > budget_tokens:
            break
        kept.append(message)
        budget_tokens -= message.tokens
    return (*head, *reversed(kept))


@runtime_checkable
class MemoryManager(Protocol):
    def store(self, tenant: str, session: str, message: Message) -> None: ...

    def history(self, tenant: str, session: str) -> tuple[Message, ...]: ...

    def window(self, tenant: str, session: str, budget_tokens: int) -> tuple[Message, ...]: ...

    def summarize(
        self, tenant: str, session: str, *, keep_last: int = 4, summarizer: Summarizer = ...
    ) -> Message | None: ...

    def clear(self, tenant: str, session: str) -> None: ...


class InMemoryMemory:
    """Messages in a dict keyed by (tenant, session)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sessions: dict[tuple[str, str], list[Message]] = {}

    def store(self, tenant: str, session: str, message: Message) -> None:
        check_name(tenant, where="tenant")
        with self._lock:
            self._sessions.setdefault((tenant, session), []).append(message)

    def history(self, tenant: str, session: str) -> tuple[Message, ...]:
        with self._lock:
            return tuple(self._sessions.get((tenant, session), ()))

    def window(self, tenant: str, session: str, budget_tokens: int) -> tuple[Message, ...]:
        return fit_window(self.history(tenant, session), budget_tokens)

    def summarize(
        self,
        tenant: str,
        session: str,
        *,
        keep_last: int = 4,
        summarizer: Summarizer = plain_summary,
    ) -> Message | None:
        """Replace all but the last ``keep_last`` messages by one summary message."""
        with self._lock:
            messages = self._sessions.get((tenant, session), [])
            if len(messages) <= keep_last:
                return None
            cut = len(messages) - keep_last
            summary = Message(role="summary", content=summarizer(messages[:cut]))
            self._sessions[(tenant, session)] = [summary, *messages[cut:]]
            return summary

    def clear(self, tenant: str, session: str) -> None:
        with self._lock:
            self._sessions.pop((tenant, session), None)


@dataclasses.dataclass(frozen=True, slots=True)
class SessionMemory:
    """A ``MemoryManager`` bound to one tenant and session (what an adapter is given);
    contents pass ``redact`` before they are stored."""

    manager: MemoryManager
    tenant: str
    session: str
    redact: Callable[[str], str] = str

    def store(self, role: str, content: str) -> None:
        self.manager.store(
            self.tenant, self.session, Message(role=role, content=self.redact(content))
        )

    def history(self) -> tuple[Message, ...]:
        return self.manager.history(self.tenant, self.session)

    def window(self, budget_tokens: int) -> tuple[Message, ...]:
        return self.manager.window(self.tenant, self.session, budget_tokens)

    def summarize(self, *, keep_last: int = 4) -> Message | None:
        return self.manager.summarize(self.tenant, self.session, keep_last=keep_last)

    def clear(self) -> None:
        self.manager.clear(self.tenant, self.session)
