"""The exceptions the idempotency guard raises.

::

    BackstayError
    ├── ConfigError
    │   └── MissingIdempotencyKey a non-idempotent operation without a key: refused
    │                             (failure: ERR_MISSING_IDEMPOTENCY_KEY)
    ├── LeaseLost                 our lease was taken over: the result was not recorded
    └── Rejected
        └── OperationInProgress   another owner is running the operation (wait=False,
                                  or the wait timed out); retry_after_s: until its lease ends
"""

from __future__ import annotations

import datetime as _dt

from backstay.errors import BackstayError, ConfigError, Rejected
from backstay.failure import Failure
from backstay.outcome import StructuredOutcome

__all__ = ["LeaseLost", "MissingIdempotencyKey", "OperationInProgress"]


class MissingIdempotencyKey(ConfigError):
    """A non-idempotent operation was started without an idempotency key: it did not run.

    ``failure`` is the error contract's ``ERR_MISSING_IDEMPOTENCY_KEY`` (VALIDATION, not
    retryable); ``outcome()`` the contract's ``StructuredOutcome`` for it."""

    def __init__(self, message: str) -> None:
        super().__init__(message, where="operation_id")
        self.failure = Failure(code="ERR_MISSING_IDEMPOTENCY_KEY", message=message)

    def outcome(self) -> StructuredOutcome[object]:
        return StructuredOutcome.failure(self.failure)


def _utc(timestamp: float) -> str:
    return _dt.datetime.fromtimestamp(timestamp, _dt.UTC).isoformat(timespec="seconds")


class OperationInProgress(Rejected):
    """``operation_id`` is being run by ``held_by`` under a lease ending at ``expires_at``
    (wall-clock UTC seconds, unless renewed); it was not run here."""

    def __init__(
        self,
        operation_id: str,
        *,
        held_by: str,
        expires_at: float,
        retry_after_s: float,
        waited_s: float = 0.0,
    ) -> None:
        self.operation_id = operation_id
        self.held_by = held_by
        self.expires_at = expires_at
        self.waited_s = waited_s
        waited = f" after waiting {waited_s:.3f} s" if waited_s > 0 else ""
        super().__init__(
            f"operation {operation_id!r} is in progress{waited}: held by {held_by!r}, "
            f"lease ends {_utc(expires_at)} unless renewed; it was not run again",
            retry_after_s=retry_after_s,
        )


class LeaseLost(BackstayError):
    """The lease ``generation`` of ``owner`` on ``operation_id`` stopped being current
    (it expired and another owner took the operation over): nothing was recorded, and a
    late ``complete`` was refused."""

    def __init__(self, operation_id: str, *, owner: str, generation: int) -> None:
        self.operation_id = operation_id
        self.owner = owner
        self.generation = generation
        super().__init__(
            f"lease of {owner!r} on operation {operation_id!r} (generation {generation}) was "
            "lost: it was not renewed in time and another owner took the operation over; "
            "this run's result was not recorded"
        )
