"""Keeping a run's allowance: the thread, in the process that runs the attempt, that raises
the grant of a run opened at a shared gateway without a spend ledger while the run goes on
(``backstay.engine.run_allowance``).

Every ``interval_s`` it reads the run's state from the gateway (``GET
/_backstay/runs/{token}``: its grant, what it used, what it holds in flight, what a
waiting request wants), hands it to the run's budget (``TopsUp.top_up``: the engine's
``AttemptBudget``, which reserves more in the batch's store when it is due), and sends the
raise to the gateway (``PUT /_backstay/runs/{token}/allowance``; idempotent, the grant
never lowered). A raise that grants more is a ``RunAllowanceRaised`` event. A gateway
that cannot be reached is asked again at the next tick; the thread stops when the run is
closed, before the attempt is settled.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Final, Protocol

from backstay.events import BUS, Event

__all__ = ["TOP_UP_INTERVAL_S", "AllowanceKeeper", "RunAllowanceRaised", "TopsUp"]

# Seconds between two looks at a run's state (a request short of its grant waits up to
# ``backstay.engine.allowance_spend.ALLOWANCE_WAIT_S`` for the next raise).
TOP_UP_INTERVAL_S: Final = 0.4
# Seconds ``stop`` waits for the thread to end (a call to the gateway in progress).
_STOP_S: Final = 15.0


class TopsUp(Protocol):
    """A run's budget that can raise its grant (``AttemptBudget.top_up``): the raise's
    JSON from the run's state at the gateway, or ``None`` (not due)."""

    def top_up(self, state: Mapping[str, Any]) -> dict[str, Any] | None: ...


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RunAllowanceRaised(Event):
    """The grant of the run of ``task``'s ``attempt`` at a shared gateway was raised to
    ``tokens`` and ``usd`` (``None``: not limited), the run having used ``used_tokens``
    and ``used_usd`` (its requests in flight included)."""

    name: ClassVar[str] = "run.allowance_raised"
    level: ClassVar[int] = logging.INFO
    task: str | None
    attempt: str | None
    tokens: int | None
    usd: float | None
    used_tokens: int
    used_usd: float


def _number(data: object, name: str) -> float:
    value = data.get(name) if isinstance(data, Mapping) else None
    return float(value) if isinstance(value, int | float) else 0.0


def _used(state: Mapping[str, Any]) -> tuple[int, float]:
    used, flying = state.get("used"), state.get("in_flight")
    tokens = _number(used, "tokens") + _number(flying, "tokens")
    return int(tokens), _number(used, "usd") + _number(flying, "usd")


class AllowanceKeeper:
    """Raises the grant of the run ``token`` of ``budget`` on its own thread: ``state``
    reads the run's state at the gateway (``None``: gone), ``send`` sends a raise; see the
    module docstring."""

    def __init__(
        self,
        *,
        budget: TopsUp,
        state: Callable[[], Mapping[str, Any] | None],
        send: Callable[[dict[str, Any]], object],
        task: str | None,
        attempt: str | None,
        interval_s: float = TOP_UP_INTERVAL_S,
    ) -> None:
        self._budget = budget
        self._state = state
        self._send = send
        self._task = task
        self._attempt = attempt
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"backstay-allowance:{attempt}", daemon=True
        )
        self.raises = 0

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop raising (the run is being closed); wait for a raise in progress."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(_STOP_S)

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            self._look()

    def _look(self) -> bool:
        try:
            return self.once()
        except Exception:  # noqa: BLE001 - a failed look is tried again at the next tick
            return False

    def once(self) -> bool:
        """One look: whether the grant was raised."""
        found = self._state()
        if found is None or self._stop.is_set():
            return False
        raised = self._budget.top_up(found)
        if raised is None:
            return False
        answer = self._send(raised)
        before = found.get("granted")
        after = raised.get("granted")
        if after == before or not isinstance(after, Mapping) or answer is None:
            return False
        self.raises += 1
        if BUS.wants(RunAllowanceRaised.level):
            used_tokens, used_usd = _used(found)
            tokens, usd = after.get("tokens"), after.get("usd")
            BUS.emit(
                RunAllowanceRaised(
                    operation=self._task,  # the batch's event log keeps its tasks' events
                    task=self._task,
                    attempt=self._attempt,
                    tokens=tokens if isinstance(tokens, int) else None,
                    usd=float(usd) if isinstance(usd, int | float) else None,
                    used_tokens=used_tokens,
                    used_usd=used_usd,
                )
            )
        return True
