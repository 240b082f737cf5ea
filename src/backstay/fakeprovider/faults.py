"""``Fault``: one failure the fake provider injects, which requests it applies to, and how.

A fault applies to the generation requests its ``api`` and ``model`` filters let through,
numbered from 1 in arrival order, and to those of them its one selector picks: ``first``
(the first N), ``requests`` (those numbers), ``probability`` (a seeded draw per request),
``outage`` (every request inside a time window) or ``turn`` (the first ``times`` requests
at that turn of a scripted session, see ``session.py``). Without a selector it applies to
all.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Final

from backstay._checks import check_name, check_number
from backstay.errors import ConfigError

__all__ = ["API_NAMES", "Fault", "FaultKind", "Outage"]

# The API families a fault may be limited to; "openai" means both OpenAI APIs.
API_NAMES: Final = ("anthropic", "openai", "openai-chat", "openai-responses", "gemini")

DEFAULT_RETRY_AFTER_S: Final = 1.0
DEFAULT_AFTER_EVENTS: Final = 2
DEFAULT_DELAY_S: Final = 1.0


class FaultKind(enum.StrEnum):
    """What goes wrong. The HTTP ones use each provider's own status, body and headers."""

    RATE_LIMIT = "rate_limit"
    SERVER_ERROR = "server_error"
    BAD_GATEWAY = "bad_gateway"
    UNAVAILABLE = "unavailable"
    GATEWAY_TIMEOUT = "gateway_timeout"
    OVERLOADED = "overloaded"
    UNAUTHORIZED = "unauthorized"
    FORBIDDEN = "forbidden"
    CONTEXT_OVERFLOW = "context_overflow"
    CONTENT_POLICY = "content_policy"
    QUOTA_EXHAUSTED = "quota_exhausted"
    STREAM_ERROR = "stream_error"
    HANG = "hang"
    STALL = "stall"
    RESET = "reset"
    SLOW = "slow"

    @property
    def streams_only(self) -> bool:
        """Applies to streaming requests only (a JSON answer has no place for it)."""
        return self is FaultKind.STREAM_ERROR


_RETRY_AFTER_KINDS: Final = frozenset(
    {FaultKind.RATE_LIMIT, FaultKind.OVERLOADED, FaultKind.UNAVAILABLE}
)
_AFTER_EVENTS_KINDS: Final = frozenset({FaultKind.STREAM_ERROR, FaultKind.STALL, FaultKind.RESET})


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Outage:
    """A window of ``duration_s`` seconds during which the fault applies to every request.

    It starts ``start_s`` seconds after the server started, or when the fault's
    ``start_request``-th request arrives (exactly one of the two; default ``start_s=0``).
    """

    duration_s: float
    start_s: float | None = None
    start_request: int | None = None

    def __post_init__(self) -> None:
        check_number(self.duration_s, where="outage.duration_s", above=True)
        if self.start_s is not None and self.start_request is not None:
            raise ConfigError("give start_s or start_request, not both", where="outage")
        if self.start_s is not None:
            check_number(self.start_s, where="outage.start_s")
        if self.start_request is not None:
            check_number(self.start_request, where="outage.start_request", minimum=1, integer=True)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Fault:
    """One scripted failure. ``kind`` says what, the filters and selector say when.

    * ``api``: one of ``API_NAMES`` (``None``: every API); ``model``: an exact model name.
    * selectors, at most one: ``first``, ``requests``, ``probability``, ``outage``,
      ``turn`` (with ``times``, default 1: how many requests at that turn it applies to;
      only requests of a scripted session have a turn).
    * ``retry_after_s``: the wait a ``rate_limit`` (default 1 s), ``overloaded`` or
      ``unavailable`` answer asks for.
    * ``after_events``: stream events sent before a ``stream_error``, ``stall`` or ``reset``
      (default 2; 0 resets before any header).
    * ``delay_s``: how long a ``slow`` answer is held (default 1 s).
    """

    kind: FaultKind
    api: str | None = None
    model: str | None = None
    first: int | None = None
    requests: tuple[int, ...] = ()
    probability: float | None = None
    outage: Outage | None = None
    turn: int | None = None
    times: int | None = None
    retry_after_s: float | None = None
    after_events: int | None = None
    delay_s: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.kind, FaultKind):
            raise ConfigError(
                f"must be one of {', '.join(FaultKind)}, got {self.kind!r}", where="fault"
            )
        if self.api is not None and self.api not in API_NAMES:
            raise ConfigError(
                f"must be one of {', '.join(API_NAMES)}, got {self.api!r}", where="api"
            )
        if self.model is not None:
            check_name(self.model, where="model")
        self._check_selector()
        self._check_options()

    def _check_selector(self) -> None:
        given = [
            name
            for name, value in (
                ("first", self.first),
                ("requests", self.requests or None),
                ("probability", self.probability),
                ("outage", self.outage),
                ("turn", self.turn),
            )
            if value is not None
        ]
        if len(given) > 1:
            raise ConfigError(f"give at most one selector, got {', '.join(given)}", where="fault")
        if self.first is not None:
            check_number(self.first, where="first", minimum=1, integer=True)
        if not isinstance(self.requests, tuple):
            raise ConfigError("must be a tuple of request numbers", where="requests")
        for number in self.requests:
            check_number(number, where="requests", minimum=1, integer=True)
        if self.probability is not None:
            check_number(self.probability, where="probability", maximum=1.0)
        if self.outage is not None and not isinstance(self.outage, Outage):
            raise ConfigError(f"must be an Outage, got {self.outage!r}", where="outage")
        if self.turn is not None:
            check_number(self.turn, where="turn", minimum=1, integer=True)
        if self.times is not None:
            if self.turn is None:
                raise ConfigError("applies only with the turn selector", where="times")
            check_number(self.times, where="times", minimum=1, integer=True)

    def _check_options(self) -> None:
        for name, value, kinds in (
            ("retry_after_s", self.retry_after_s, _RETRY_AFTER_KINDS),
            ("after_events", self.after_events, _AFTER_EVENTS_KINDS),
            ("delay_s", self.delay_s, frozenset({FaultKind.SLOW})),
        ):
            if value is None:
                continue
            if self.kind not in kinds:
                allowed = ", ".join(sorted(kinds))
                raise ConfigError(f"applies only to {allowed}, not {self.kind}", where=name)
            check_number(value, where=name, integer=name == "after_events")

    @property
    def retry_after(self) -> float | None:
        """The wait the answer asks for, with the default of ``rate_limit`` applied."""
        if self.retry_after_s is None and self.kind is FaultKind.RATE_LIMIT:
            return DEFAULT_RETRY_AFTER_S
        return self.retry_after_s

    @property
    def turn_times(self) -> int:
        """How many requests at ``turn`` the fault applies to."""
        return 1 if self.times is None else self.times

    @property
    def events_before(self) -> int:
        return DEFAULT_AFTER_EVENTS if self.after_events is None else self.after_events

    @property
    def delay(self) -> float:
        return DEFAULT_DELAY_S if self.delay_s is None else self.delay_s

    def admits(self, api: str, model: str, *, stream: bool) -> bool:
        """Whether the filters let a request of ``api`` for ``model`` through."""
        if self.kind.streams_only and not stream:
            return False
        if self.model is not None and self.model != model:
            return False
        if self.api is None or self.api == api:
            return True
        return self.api == "openai" and api.startswith("openai-")
