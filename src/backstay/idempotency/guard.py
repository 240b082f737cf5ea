"""``IdempotencyGuard``: run an operation at most once per ``operation_id``, across workers.

``await guard.run(operation_id, fn)``:

1. ``claim`` the operation in the store.
2. ``Done``: return the cached result; ``fn`` is not called.
3. ``Acquired``: run ``fn`` while a keeper renews the lease every third of its TTL; on
   success ``complete`` (result cached, lease ended, atomically) and return the result as
   stored; on any exception ``release`` (nothing recorded as done) and re-raise it as is.
   If the lease is lost meanwhile (renewals failed, another owner took over), ``fn`` is
   cancelled (async) or its result refused (sync) and ``LeaseLost`` is raised.
4. ``Busy``: a lease whose holder is a process of this host that no longer exists
   (``backstay.idempotency.owners``) is taken over at once (``take_over_dead_holders``);
   otherwise, with ``wait=False`` raise ``OperationInProgress``, or sleep on the clock
   with growing delays and claim again, until ``Done`` (return it), ``Acquired`` (the
   holder failed: run it here) or ``wait_timeout_s`` (``OperationInProgress``).

Every caller gets the JSON round trip of the result, whether it ran ``fn`` or not, so
racing callers receive equal values. ``run_sync`` is the same protocol for plain
functions. Store calls are short and synchronous, also from ``run``.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from backstay._checks import check_name, check_number
from backstay.clock import SYSTEM_CLOCK, Clock
from backstay.idempotency._keeper import keep_async, keep_in_thread
from backstay.idempotency._schedules import WaitSchedule
from backstay.idempotency.errors import LeaseLost, MissingIdempotencyKey
from backstay.idempotency.owners import default_owner, holder_is_dead
from backstay.idempotency.records import Acquired, Busy, Claim, Lease
from backstay.idempotency.settings import GuardSettings
from backstay.idempotency.store import OperationStore

__all__ = ["AsyncOperation", "IdempotencyGuard", "SyncOperation", "held_lease"]

# The lease of the operation a guard is running, seen from inside its ``fn``.
_HELD: contextvars.ContextVar[Lease | None] = contextvars.ContextVar("held_lease", default=None)


def held_lease() -> Lease | None:
    """The lease under which the operation running here was started (inside the ``fn``
    of ``IdempotencyGuard.run`` and its kin), ``None`` elsewhere. A ``generation`` of 1 is
    the operation's first lease: no owner ran it before."""
    return _HELD.get()


AsyncOperation = Callable[[], Awaitable[Mapping[str, object]]]
SyncOperation = Callable[[], Mapping[str, object]]

_NO_KEY = (
    "non-idempotent operations without a key are refused: pass the operation_id that "
    "names this operation across every retry (backstay.idempotency.operation_id)"
)


def _lost(lease: Lease) -> LeaseLost:
    return LeaseLost(lease.operation_id, owner=lease.owner, generation=lease.generation)


def _seen(task: asyncio.Future[Any]) -> None:
    """Mark the exception ``task`` ended with as seen (a done callback): the caller reads
    ``result()`` when it wants it, and when it is leaving with an exception of its own
    (cancelled, or the store gone) asyncio must not report this one as "never retrieved"
    (a task cancelled while its store is gone fails as it unwinds)."""
    if not task.cancelled():
        task.exception()


async def _stop(*tasks: asyncio.Future[Any]) -> None:
    """Cancel ``tasks`` and wait for them to end. All are cancelled before the first wait:
    a cancellation of the caller during the wait (its task group stopping) leaves none
    of them running unowned."""
    running = [task for task in tasks if not task.done()]
    for task in running:
        task.cancel()
    if running:
        await asyncio.wait(running)


class IdempotencyGuard:
    """Runs operations through ``store`` so each ``operation_id`` completes at most once."""

    def __init__(
        self,
        store: OperationStore,
        *,
        settings: GuardSettings | None = None,
        owner: str | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        if owner is not None:
            check_name(owner, where="owner")
        self.store = store
        self.settings = settings or GuardSettings()
        self.owner = owner or default_owner()
        self._clock = clock

    def _claim(self, operation_id: str, owner: str, ttl_s: float) -> Claim:
        """``store.claim``, taking over a lease whose holder is certainly dead."""
        claim = self.store.claim(operation_id, owner, ttl_s)
        if (
            isinstance(claim, Busy)
            and self.settings.take_over_dead_holders
            and holder_is_dead(claim.held_by)
        ):
            claim = self.store.claim(operation_id, owner, ttl_s, take_over=claim)
        return claim

    # -- the async driver ---------------------------------------------------------------

    async def run(
        self,
        operation_id: str,
        fn: AsyncOperation,
        *,
        owner: str | None = None,
        lease_ttl_s: float | None = None,
        wait: bool = True,
        wait_timeout_s: float | None = None,
    ) -> dict[str, Any]:
        """The result of ``operation_id``: cached, awaited from another owner, or ``fn()``'s."""
        who, ttl, waiting = self._check(operation_id, owner, lease_ttl_s, wait_timeout_s)
        while True:
            claim = self._claim(operation_id, who, ttl)
            if isinstance(claim, Busy):
                await self._clock.asleep(self._delay(waiting, claim, wait))
            elif isinstance(claim, Acquired):
                return await self._run_leased(claim.lease, fn)
            else:
                return claim.result.result

    async def run_non_idempotent(
        self,
        operation_id: str | None,
        fn: AsyncOperation,
        *,
        owner: str | None = None,
        lease_ttl_s: float | None = None,
        wait: bool = True,
        wait_timeout_s: float | None = None,
    ) -> dict[str, Any]:
        """``run`` for an operation whose repetition does harm (billing, edits, messages):
        refused with ``MissingIdempotencyKey`` (a ``ConfigError`` carrying the failure
        ``ERR_MISSING_IDEMPOTENCY_KEY``) unless ``operation_id`` is given."""
        key = self._require_key(operation_id)
        return await self.run(
            key, fn, owner=owner, lease_ttl_s=lease_ttl_s, wait=wait, wait_timeout_s=wait_timeout_s
        )

    async def _run_leased(self, lease: Lease, fn: AsyncOperation) -> dict[str, Any]:
        try:
            result = await self._run_kept(lease, fn)
            cached = self.store.complete(lease, result)
        except BaseException as exc:
            self._release_quietly(lease, exc)
            raise
        if cached is None:
            raise _lost(lease)
        return cached.result

    async def _run_kept(self, lease: Lease, fn: AsyncOperation) -> Mapping[str, object]:
        """``fn()``'s result, the lease renewed meanwhile; when the lease is lost first,
        ``fn`` is cancelled (so two owners never run at once) and ``LeaseLost`` raised."""
        keeper = asyncio.create_task(keep_async(self.store, lease, self._clock))
        keeper.add_done_callback(_seen)
        work: asyncio.Future[Mapping[str, object]] | None = None
        try:
            held = _HELD.set(lease)
            try:
                work = asyncio.ensure_future(fn())  # its task runs in a copy of this context
            finally:
                _HELD.reset(held)
            work.add_done_callback(_seen)
            await asyncio.wait((work, keeper), return_when=asyncio.FIRST_COMPLETED)
        finally:
            await _stop(*(task for task in (keeper, work) if task is not None))
        if not keeper.cancelled():
            keeper.result()  # the keeper returns only when the lease is lost
            if work.cancelled():
                raise _lost(lease)
        return work.result()

    # -- the sync driver ----------------------------------------------------------------

    def run_sync(
        self,
        operation_id: str,
        fn: SyncOperation,
        *,
        owner: str | None = None,
        lease_ttl_s: float | None = None,
        wait: bool = True,
        wait_timeout_s: float | None = None,
    ) -> dict[str, Any]:
        """``run`` for a plain function; the lease is renewed from a helper thread."""
        who, ttl, waiting = self._check(operation_id, owner, lease_ttl_s, wait_timeout_s)
        while True:
            claim = self._claim(operation_id, who, ttl)
            if isinstance(claim, Busy):
                self._clock.sleep(self._delay(waiting, claim, wait))
            elif isinstance(claim, Acquired):
                return self._run_leased_sync(claim.lease, fn)
            else:
                return claim.result.result

    def run_non_idempotent_sync(
        self,
        operation_id: str | None,
        fn: SyncOperation,
        *,
        owner: str | None = None,
        lease_ttl_s: float | None = None,
        wait: bool = True,
        wait_timeout_s: float | None = None,
    ) -> dict[str, Any]:
        """``run_non_idempotent`` for a plain function."""
        key = self._require_key(operation_id)
        return self.run_sync(
            key, fn, owner=owner, lease_ttl_s=lease_ttl_s, wait=wait, wait_timeout_s=wait_timeout_s
        )

    def _run_leased_sync(self, lease: Lease, fn: SyncOperation) -> dict[str, Any]:
        stop = threading.Event()
        keeper = threading.Thread(
            target=keep_in_thread,
            args=(self.store, lease, self._clock, stop),
            name=f"backstay-lease:{lease.operation_id}",
            daemon=True,
        )
        try:
            keeper.start()
            held = _HELD.set(lease)
            try:
                result = fn()
            finally:
                _HELD.reset(held)
                stop.set()
                keeper.join()
            # A lost lease may still complete if nobody took over: the store decides.
            cached = self.store.complete(lease, result)
        except BaseException as exc:
            self._release_quietly(lease, exc)
            raise
        if cached is None:
            raise _lost(lease)
        return cached.result

    # -- shared -------------------------------------------------------------------------

    def _check(
        self,
        operation_id: str,
        owner: str | None,
        lease_ttl_s: float | None,
        wait_timeout_s: float | None,
    ) -> tuple[str, float, WaitSchedule]:
        check_name(operation_id, where="operation_id")
        if owner is not None:
            check_name(owner, where="owner")
        if lease_ttl_s is not None:
            check_number(lease_ttl_s, where="lease_ttl_s", above=True)
        if wait_timeout_s is not None:
            check_number(wait_timeout_s, where="wait_timeout_s")
        timeout = self.settings.wait_timeout_s if wait_timeout_s is None else wait_timeout_s
        waiting = WaitSchedule(self.settings, timeout_s=timeout, start=self._clock.monotonic())
        ttl = self.settings.lease_ttl_s if lease_ttl_s is None else float(lease_ttl_s)
        return owner or self.owner, ttl, waiting

    def _delay(self, waiting: WaitSchedule, busy: Busy, wait: bool) -> float:
        now, wall_now = self._clock.monotonic(), self._clock.now().timestamp()
        return waiting.next_delay(busy, wait=wait, now=now, wall_now=wall_now)

    @staticmethod
    def _require_key(operation_id: str | None) -> str:
        if operation_id is None or operation_id == "":
            raise MissingIdempotencyKey(_NO_KEY)
        return operation_id

    def _release_quietly(self, lease: Lease, exc: BaseException) -> None:
        """Give the lease back after a failure; a store error here must not hide ``exc``."""
        try:
            self.store.release(lease)
        except Exception as err:  # noqa: BLE001 - the lease expires on its own anyway
            exc.add_note(f"backstay: releasing the lease on {lease.operation_id!r} failed: {err!r}")
