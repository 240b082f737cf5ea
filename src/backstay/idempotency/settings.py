"""``GuardSettings``: how long leases last and how a caller waits for another's run.

Frozen and validated on construction: a bad value raises ``ConfigError`` naming the field
(``where="idempotency.<field>"``). Variants are made with ``dataclasses.replace``.
"""

from __future__ import annotations

import dataclasses
from typing import Final

from backstay._checks import check_number
from backstay.errors import ConfigError

__all__ = ["RENEW_FRACTION", "GuardSettings"]

# Long enough that a stalled process is not mistaken for a dead one by one missed
# renewal; short enough that a crashed worker's operation is picked up within a minute.
DEFAULT_LEASE_TTL_S: Final = 60.0
# A waiter gives up on another owner's run after this long (agent runs take minutes).
DEFAULT_WAIT_TIMEOUT_S: Final = 600.0
DEFAULT_POLL_INITIAL_S: Final = 0.05
DEFAULT_POLL_MAX_S: Final = 2.0
DEFAULT_POLL_MULTIPLIER: Final = 2.0
# A held lease is renewed every ttl * RENEW_FRACTION: two renewals may fail before it ends.
RENEW_FRACTION: Final = 1 / 3


def _where(field: str) -> str:
    return f"idempotency.{field}"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class GuardSettings:
    """Lease length and the polling of a caller that found the operation busy.

    * ``lease_ttl_s``: how long a claim holds the operation; renewed every third of it.
    * ``wait_timeout_s``: how long ``run(..., wait=True)`` waits for another owner's run.
    * ``poll_initial_s``, ``poll_multiplier``, ``poll_max_s``: the waiter re-claims after
      ``poll_initial_s``, then after delays growing by ``poll_multiplier`` up to
      ``poll_max_s`` (never past the end of the wait).
    * ``take_over_dead_holders``: a lease held by a process of this host that no longer
      exists is taken over at once instead of waited out (see ``owners``).
    """

    lease_ttl_s: float = DEFAULT_LEASE_TTL_S
    wait_timeout_s: float = DEFAULT_WAIT_TIMEOUT_S
    poll_initial_s: float = DEFAULT_POLL_INITIAL_S
    poll_max_s: float = DEFAULT_POLL_MAX_S
    poll_multiplier: float = DEFAULT_POLL_MULTIPLIER
    take_over_dead_holders: bool = True

    def __post_init__(self) -> None:
        check_number(self.lease_ttl_s, where=_where("lease_ttl_s"), above=True)
        check_number(self.wait_timeout_s, where=_where("wait_timeout_s"))
        check_number(self.poll_initial_s, where=_where("poll_initial_s"), above=True)
        check_number(self.poll_max_s, where=_where("poll_max_s"), above=True)
        check_number(self.poll_multiplier, where=_where("poll_multiplier"), minimum=1.0)
        if not isinstance(self.take_over_dead_holders, bool):
            raise ConfigError(
                f"must be true or false, got {self.take_over_dead_holders!r}",
                where=_where("take_over_dead_holders"),
            )
        if self.poll_max_s < self.poll_initial_s:
            raise ConfigError(
                f"must be >= poll_initial_s ({self.poll_initial_s!r}), got {self.poll_max_s!r}",
                where=_where("poll_max_s"),
            )
