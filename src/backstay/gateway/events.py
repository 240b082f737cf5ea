"""The gateway's events: one ``RequestRetried`` per client request that took more than one
upstream attempt (or was refused by an open circuit), emitted when its answer is decided;
one ``RequestFellBack`` per move of a request along its fallback chain.
The per-attempt events (``retry.attempt_failed``, ``task.retrying`` …) come from the retry
driver, under the operation ``gateway:{provider}/{model}``."""

from __future__ import annotations

import dataclasses
import logging
from typing import ClassVar

from backstay.events import Event
from backstay.failure import Failure

__all__ = ["RequestFellBack", "RequestRetried"]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RequestRetried(Event):
    """A request the gateway retried: ``attempts`` upstream attempts, the last ``failure``
    seen, and the ``status`` the client got (``outcome``: ``succeeded``, ``gave_up`` or
    ``circuit_open``). No header, key or body is part of it."""

    name: ClassVar[str] = "request.retried"
    level: ClassVar[int] = logging.INFO
    provider: str
    model: str
    endpoint: str
    attempts: int
    status: int
    outcome: str
    failure: Failure | None
    idempotency_key: str | None
    elapsed_s: float
    # The run the request came from (its run token's task and attempt), if any.
    task: str | None = None
    attempt: str | None = None


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RequestFellBack(Event):
    """A request moved from ``model`` to ``fallback_model`` of its chain (same
    ``provider``; its run's fallback model, the gateway's ``fallbacks``): ``reason``
    ``circuit_open`` or ``cooling_down``, ``model`` was unavailable when it came;
    ``circuit_opened``, its own failures opened its circuit; with the fallback rules, the
    kind of the failure that moved it (``server_error``, ``quota_exhausted`` …)."""

    name: ClassVar[str] = "request.fell_back"
    level: ClassVar[int] = logging.WARNING
    provider: str
    model: str
    fallback_model: str
    endpoint: str
    reason: str
    task: str | None = None
    attempt: str | None = None
