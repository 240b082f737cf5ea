"""Shared helpers of the breaker tests: failures by kind, an event recorder."""

from __future__ import annotations

from typing import Final

from backstay.failure import Failure

SERVER: Final = Failure(code="ERR_HTTP_503_UNAVAILABLE")
TIMEOUT: Final = Failure(code="ERR_READ_TIMEOUT")
BAD_REQUEST: Final = Failure(code="ERR_HTTP_400_BAD_REQUEST")
RATE_LIMITED: Final = Failure(code="ERR_HTTP_429_RATE_LIMITED")
QUOTA: Final = Failure(code="ERR_LLM_QUOTA_EXHAUSTED")
AUTH: Final = Failure(code="ERR_HTTP_401_UNAUTHORIZED")
CANCELLED: Final = Failure(code="ERR_CANCELLED")


class Events:
    """An ``on_event`` callback that keeps what it is given."""

    def __init__(self) -> None:
        self.seen: list[object] = []

    def __call__(self, event: object) -> None:
        self.seen.append(event)

    @property
    def names(self) -> list[str]:
        return [str(getattr(e, "name", "?")) for e in self.seen]
