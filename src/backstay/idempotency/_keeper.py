"""The lease keeper: renews a held lease while the operation runs, async or in a thread.

Both keepers follow ``RenewalSchedule`` on the injected clock's wall time, the time the
store measures expiries in (give the guard and its store the same clock), counted from
when the lease was acquired, so a keeper that starts late still renews on time. They
wait in short real ticks and look at the clock after each, rather than sleeping on the
clock: the wait must end as soon as the operation finishes, and a manual clock
(``FakeClock``) only moves when a test moves it. A renewal that raises (a store briefly
unreachable) is retried until the lease has surely run out; a renewal refused by the
store means the lease is lost.
"""

from __future__ import annotations

import asyncio
import threading

from backstay.clock import Clock
from backstay.idempotency._schedules import RenewalSchedule
from backstay.idempotency.records import Lease
from backstay.idempotency.store import OperationStore

__all__ = ["keep_async", "keep_in_thread"]


def _now(clock: Clock) -> float:
    return clock.now().timestamp()


def _schedule(lease: Lease) -> RenewalSchedule:
    return RenewalSchedule(lease.ttl_s, lease.expires_at - lease.ttl_s)


def _renew_once(store: OperationStore, lease: Lease, schedule: RenewalSchedule, now: float) -> bool:
    """Renew now; ``False`` when the lease is lost."""
    try:
        renewed = store.renew(lease)
    except Exception:  # noqa: BLE001 - a failed renewal is retried, not fatal, until expiry
        return schedule.renewal_failed(now)
    if renewed:
        schedule.renewed(now)
    return renewed


async def keep_async(store: OperationStore, lease: Lease, clock: Clock) -> None:
    """Renew ``lease`` until cancelled; return only when it is lost."""
    schedule = _schedule(lease)
    while True:
        wait = schedule.wait_s(_now(clock))
        if wait > 0:
            await asyncio.sleep(wait)
        elif not _renew_once(store, lease, schedule, _now(clock)):
            return


def keep_in_thread(
    store: OperationStore, lease: Lease, clock: Clock, stop: threading.Event
) -> None:
    """Renew ``lease`` until ``stop`` is set; return early when it is lost."""
    schedule = _schedule(lease)
    while not stop.is_set():
        wait = schedule.wait_s(_now(clock))
        if wait > 0:
            stop.wait(wait)
        elif not _renew_once(store, lease, schedule, _now(clock)):
            return
