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
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

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
    """One message: ``role`` (user, assistant, tool, system, summary), its text and its
    JSON ``metadata`` (kept by ``InMemoryMemory``; the SQLite and Redis memories keep
    role and text only)."""

    role: str
    content: str
    tokens: int = -1
    metadata: Mapping[str, Any] = dataclasses.field(default_factory=dict, compare=False)

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
    contents pass ``redact`` before they are stored.

    It also reads as the session's list of messages (``len``, iteration, indexing) and
    has the agent adapter interface's four ``MemoryManager`` methods: ``store_message``,
    ``get_context_window``, ``summarize_history`` and ``clear_session``."""

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

    def __len__(self) -> int:
        return len(self.history())

    def __iter__(self) -> Iterator[Message]:
        return iter(self.history())

    def __getitem__(self, index: int) -> Message:
        return self.history()[index]

    def store_message(self, role: str, content: str, metadata: Mapping[str, Any]) -> None:
        """Store a message with its metadata (string values redacted like the content)."""
        if not isinstance(metadata, Mapping):
            raise TypeError(f"message metadata must be a mapping, got {metadata!r}")
        kept = {str(k): self.redact(v) if isinstance(v, str) else v for k, v in metadata.items()}
        self.manager.store(
            self.tenant,
            self.session,
            Message(role=role, content=self.redact(content), metadata=kept),
        )

    def get_context_window(self, max_tokens: int) -> list[Message]:
        """The newest messages within ``max_tokens`` (a summary first when it fits)."""
        return list(self.window(max_tokens))

    def summarize_history(self, target_tokens: int) -> str:
        """Replace the messages that do not fit ``target_tokens`` by one summary; its text
        (``""`` when the whole history fits)."""
        history = self.history()
        fits = fit_window(history, target_tokens)
        if len(fits) == len(history):
            return ""
        summary = self.summarize(keep_last=max(0, len(fits) - 1))
        return "" if summary is None else summary.content

    def clear_session(self, session_id: str) -> None:
        """Forget session ``session_id`` of this tenant."""
        self.manager.clear(self.tenant, session_id)
