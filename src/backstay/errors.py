"""Exceptions backstay itself raises. Failures it *classifies* are values (``taxonomy``).

::

    BackstayError
    ├── ConfigError (also a ValueError)   bad settings or arguments, named with where they are
    ├── AdapterError                      an adapter's attempt failed; carries its Failure
    ├── WorkspaceSnapshotError            a workspace could not be snapshotted or restored
    ├── StoreUnreachable                  the shared store stopped answering (names it)
    └── Rejected                          backstay refused to run the call at all
        ├── CircuitOpen                   the circuit is open; retry_after_s says until when
        ├── RetryBudgetExhausted          retries would exceed the operation's retry budget
        └── DeadlineExceeded              the deadline cannot fit the next wait

Caller exceptions are never wrapped: when retries run out, the original exception
propagates with its ``Failure`` attached (``exc.failure`` and a note). ``Rejected``
errors are raised only when backstay itself decides not to call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from backstay.failure import Failure

__all__ = [
    "AdapterError",
    "BackstayError",
    "CircuitOpen",
    "ConfigError",
    "DeadlineExceeded",
    "Rejected",
    "RetryBudgetExhausted",
    "StoreUnreachable",
    "WorkspaceSnapshotError",
]


class BackstayError(Exception):
    """Base of every exception backstay raises on its own account."""


class ConfigError(BackstayError, ValueError):
    """Invalid settings or arguments. ``where`` names the field, flag or file position."""

    def __init__(self, message: str, *, where: str | None = None) -> None:
        self.where = where
        self.reason = message
        super().__init__(f"{where}: {message}" if where else message)


class AdapterError(BackstayError):
    """The one exception adapters raise: an attempt failed, and ``failure`` says how.

    ``partial_output`` keeps what the attempt produced before it failed (a stream cut
    short, an agent stopped mid-run), so nothing delivered is silently thrown away.
    """

    def __init__(self, failure: Failure, *, partial_output: str | None = None) -> None:
        self.failure = failure
        self.partial_output = partial_output
        detail = f": {failure.message}" if failure.message else ""
        super().__init__(f"{failure.kind}/{failure.code}{detail}")


class WorkspaceSnapshotError(BackstayError):
    """A workspace could not be snapshotted (too large, unreadable) or restored; the
    message names the workspace and why."""


class StoreUnreachable(BackstayError):
    """The shared store stopped answering; ``store`` names it (without a password).
    What was recorded before stays recorded; what was being written may not be. Raised by
    the stores (``backstay.store``, which exports it too)."""

    def __init__(self, store: str, reason: str) -> None:
        self.store = store
        self.reason = reason
        super().__init__(f"the shared store {store} does not answer: {reason}")


class Rejected(BackstayError):
    """backstay refused to make the call. ``retry_after_s`` says when trying again may work."""

    def __init__(self, message: str, *, retry_after_s: float | None = None) -> None:
        self.retry_after_s = retry_after_s
        super().__init__(message)


class CircuitOpen(Rejected):
    """The circuit ``name`` is open (or its half-open probes are all taken)."""

    def __init__(self, name: str, *, retry_after_s: float | None) -> None:
        self.name = name
        wait = "" if retry_after_s is None else f"; next probe in {retry_after_s:.3f} s"
        super().__init__(f"circuit {name!r} is open{wait}", retry_after_s=retry_after_s)


class RetryBudgetExhausted(Rejected):
    """Retrying now would exceed the retry budget of ``name``: fail fast, join no storm."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"retry budget {name!r} is spent")


class DeadlineExceeded(Rejected):
    """The call's deadline cannot fit the next attempt or wait."""

    def __init__(self, deadline_s: float, *, needed_s: float) -> None:
        self.deadline_s = deadline_s
        self.needed_s = needed_s
        super().__init__(f"deadline of {deadline_s:.3f} s cannot fit a wait of {needed_s:.3f} s")
