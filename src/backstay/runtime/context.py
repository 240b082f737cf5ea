"""``ExecutionContext``: what one run knows about itself, handed to every adapter call.

It names the run (session, tenant, user, trace id, run id), holds its persistent
``state`` (checkpointed with the step results), its ``memory`` (the session's messages),
its tool result ``cache`` and the ``model`` gate every model call goes through, and shows
its counts (steps, token usage) and start time. The runtime owns it; adapters read it and
write only ``state`` and ``memory``.
"""

from __future__ import annotations

import datetime as _dt
from typing import TYPE_CHECKING, Any

from backstay.adapters.usage import Usage
from backstay.runtime.errors import RunHalted
from backstay.runtime.limits import LimitTracker
from backstay.runtime.memory import SessionMemory

if TYPE_CHECKING:
    from backstay.runtime.modelgate import ModelGate
    from backstay.runtime.store import RunStore

__all__ = ["ExecutionContext", "ToolCache"]


class ToolCache:
    """The tool result cache of one tenant."""

    __slots__ = ("_store", "tenant")

    def __init__(self, store: RunStore, tenant: str) -> None:
        self._store = store
        self.tenant = tenant

    def get(self, key: str) -> tuple[bool, Any]:
        return self._store.cache_get(self.tenant, key)

    def put(self, key: str, value: Any) -> None:
        self._store.cache_put(self.tenant, key, value)


class ExecutionContext:
    """One run's identity, state and counters. ``feedback`` holds the validation errors
    of the previous attempt of the current step (``None`` on a first attempt)."""

    __slots__ = (
        "adapter",
        "cache",
        "feedback",
        "halted",
        "memory",
        "model",
        "run_id",
        "session_id",
        "started_at",
        "state",
        "tenant",
        "trace_id",
        "tracker",
        "user",
    )

    def __init__(
        self,
        *,
        run_id: str,
        session_id: str,
        tenant: str,
        user: str | None,
        trace_id: str,
        adapter: str,
        state: dict[str, Any],
        memory: SessionMemory,
        cache: ToolCache,
        tracker: LimitTracker,
        started_at: _dt.datetime,
    ) -> None:
        self.run_id = run_id
        self.session_id = session_id
        self.tenant = tenant
        self.user = user
        self.trace_id = trace_id
        self.adapter = adapter
        self.state = state
        self.memory = memory
        self.cache = cache
        self.tracker = tracker
        self.started_at = started_at
        self.feedback: str | None = None
        self.halted: RunHalted | None = None
        self.model: ModelGate  # set by the runtime right after construction

    # The agent adapter interface's names for the same fields.
    @property
    def tenant_id(self) -> str:
        return self.tenant

    @property
    def user_id(self) -> str | None:
        return self.user

    @property
    def persistent_state(self) -> dict[str, Any]:
        return self.state

    @property
    def session_memory(self) -> SessionMemory:
        return self.memory

    @property
    def tool_results_cache(self) -> ToolCache:
        return self.cache

    @property
    def token_usage(self) -> Usage:
        return self.usage

    @property
    def start_time(self) -> _dt.datetime:
        return self.started_at

    @property
    def step_count(self) -> int:
        return self.tracker.steps

    @property
    def usage(self) -> Usage:
        return self.tracker.usage

    def halt(self, exc: RunHalted) -> RunHalted:
        """Remember the run's first halt (later ones do not replace it); returns it."""
        if self.halted is None:
            self.halted = exc
        return self.halted

    def check_halted(self) -> None:
        """Raise the run's halt again, if it has one."""
        if self.halted is not None:
            raise self.halted
