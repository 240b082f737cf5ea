"""``ScriptedAdapter``: an in-process adapter whose attempts follow a script.

::

    adapter = ScriptedAdapter(["ERR_CONNECTION_REFUSED", "ok"])   # fails once, then succeeds
    engine = Engine(state_dir, adapters={adapter.name: adapter}, clock=FakeClock())

Attempt N of an operation acts out step N of its script (the last step repeats). A step is

* ``"ok"``: success (the answer ``"done <operation_id>"``); a ``Usage``: success with it;
  an ``AgentResult``: returned as it is (a failed one fails like any other);
* an ``ERR_*`` code or a ``Failure``: the attempt fails with it;
* ``"hang"``: nothing happens until the request's ``timeout_s`` passes (real time), then
  the attempt fails with ``ERR_TIMEOUT``, as a killed agent does;
* an exception: raised inside the attempt, so it is classified (``backstay.classify``) and
  raised as ``AdapterError`` with the exception as its cause, as every adapter does.

It is a ``BaseAdapter``: failures leave through ``AdapterError`` exactly as a real
adapter's do, ``agent.log`` says what each attempt did, and ``run`` works as a harness
entry point. Any ``config`` is accepted. ``script`` may also map operation ids or task ids
(of engine tasks) to their own scripts; operations it does not name succeed.
``raw_exceptions=True`` lets scripted exceptions escape as they are, to test how a caller
copes with an adapter that breaks the contract. Every dispatch is recorded in ``calls``
(``ids`` has the ``(operation_id, attempt_id)`` pairs).
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Final, TypeAlias

from backstay.adapters.base import BaseAdapter
from backstay.adapters.capture import Capture
from backstay.adapters.contract import AgentRequest, AgentResult, AgentStatus
from backstay.adapters.usage import Usage
from backstay.errors import ConfigError
from backstay.failure import Failure
from backstay.idempotency.ids import parse_operation_id
from backstay.taxonomy import CODES

__all__ = ["OK", "ScriptedAdapter", "ScriptedCall", "Step"]

OK: Final = "ok"
HANG: Final = "hang"

Step: TypeAlias = str | Failure | AgentResult | Usage | BaseException
Script: TypeAlias = Sequence[Step] | Mapping[str, Sequence[Step]]


@dataclasses.dataclass(frozen=True, slots=True)
class ScriptedCall:
    """One dispatch: the ids it was given, where it wrote, and its number (1-based) among
    this adapter's dispatches of that operation."""

    operation_id: str
    attempt_id: str
    output_dir: Path
    number: int


class _OutsideContract(BaseException):
    """Carries a scripted exception past ``BaseAdapter``'s translation (``raw_exceptions``)."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(error)
        self.error = error


def _check_steps(steps: object, where: str) -> tuple[Step, ...]:
    if isinstance(steps, str | bytes) or not isinstance(steps, Sequence) or not steps:
        raise ConfigError("must be a non-empty list of steps", where=where)
    for i, step in enumerate(steps):
        at = f"{where}[{i}]"
        if isinstance(step, str):
            if step not in (OK, HANG) and step not in CODES:
                raise ConfigError(
                    f"must be 'ok', 'hang' or an ERR_* code of backstay.CODES, got {step!r}",
                    where=at,
                )
        elif not isinstance(step, Failure | AgentResult | Usage | BaseException):
            raise ConfigError(
                "must be 'ok', 'hang', an ERR_* code, a Failure, an AgentResult, a Usage or "
                f"an exception, got {type(step).__name__}",
                where=at,
            )
    return tuple(steps)


def _task_id(operation_id: str) -> str | None:
    try:
        return parse_operation_id(operation_id).task_id
    except ConfigError:
        return None


class ScriptedAdapter(BaseAdapter):
    """Acts out a script in process; see the module docstring.

    ``hold_s`` keeps every dispatch busy that long (real time), and ``active`` /
    ``max_active`` count dispatches in flight, to observe concurrency. ``on_dispatch`` is
    called with each ``ScriptedCall`` as its dispatch starts. ``partial_output`` is what a
    failing step leaves as ``AdapterError.partial_output``.
    """

    name: ClassVar[str] = "scripted"

    def __init__(
        self,
        script: Script = (OK,),
        *,
        hold_s: float = 0.0,
        on_dispatch: Callable[[ScriptedCall], None] | None = None,
        partial_output: str = "",
        raw_exceptions: bool = False,
    ) -> None:
        if isinstance(script, Mapping):
            self._default: tuple[Step, ...] = (OK,)
            self._scripts = {
                str(key): _check_steps(steps, f"script[{key!r}]") for key, steps in script.items()
            }
        else:
            self._default = _check_steps(script, "script")
            self._scripts = {}
        self.hold_s = hold_s
        self.on_dispatch = on_dispatch
        self.partial_output = partial_output
        self.raw_exceptions = raw_exceptions
        self.calls: list[ScriptedCall] = []
        self.active = 0
        self.max_active = 0
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}

    def validate_config(self, config: Mapping[str, Any]) -> bool:
        """Any settings are accepted: a stand-in takes the real adapter's settings as given."""
        if not isinstance(config, Mapping):
            raise ConfigError(f"must be a mapping, got {type(config).__name__}", where="config")
        return True

    @property
    def ids(self) -> list[tuple[str, str]]:
        """``(operation_id, attempt_id)`` of every dispatch, in order."""
        return [(call.operation_id, call.attempt_id) for call in self.calls]

    def calls_for(self, operation_id: str) -> list[ScriptedCall]:
        """The dispatches of one operation, in order."""
        return [call for call in self.calls if call.operation_id == operation_id]

    def script_for(self, operation_id: str) -> tuple[Step, ...]:
        """The script ``operation_id`` follows: its own, its task's, or the default."""
        found = self._scripts.get(operation_id)
        if found is None:
            task = _task_id(operation_id)
            found = self._scripts.get(task) if task is not None else None
        return self._default if found is None else found

    def _record(self, request: AgentRequest, operation_id: str, attempt_id: str) -> ScriptedCall:
        with self._lock:
            number = self._counts.get(operation_id, 0) + 1
            self._counts[operation_id] = number
            call = ScriptedCall(operation_id, attempt_id, request.output_dir, number)
            self.calls.append(call)
        return call

    async def dispatch(
        self, request: AgentRequest, *, operation_id: str, attempt_id: str, capture: Capture
    ) -> AgentResult:
        try:
            return await super().dispatch(
                request, operation_id=operation_id, attempt_id=attempt_id, capture=capture
            )
        except _OutsideContract as escape:
            raise escape.error from None

    async def execute(
        self, request: AgentRequest, *, operation_id: str, attempt_id: str, capture: Capture
    ) -> AgentResult:
        call = self._record(request, operation_id, attempt_id)
        script = self.script_for(operation_id)
        step = script[min(call.number, len(script)) - 1]
        if self.on_dispatch is not None:
            self.on_dispatch(call)
        self.active += 1
        self.max_active = max(self.max_active, self.active)
        try:
            if self.hold_s > 0:
                await asyncio.sleep(self.hold_s)
            if step == HANG:
                await capture.alog(f"scripted: attempt {call.number} hangs")
                await asyncio.sleep(request.timeout_s)
        finally:
            self.active -= 1
        return self._act(step, request, operation_id)

    def _act(self, step: Step, request: AgentRequest, operation_id: str) -> AgentResult:
        if isinstance(step, BaseException):
            if self.raw_exceptions:
                raise _OutsideContract(step)
            raise step
        if isinstance(step, AgentResult):
            return step
        if isinstance(step, Usage) or step == OK:
            usage = step if isinstance(step, Usage) else Usage()
            return AgentResult(
                status=AgentStatus.SUCCEEDED, output=f"done {operation_id}", usage=usage
            )
        if step == HANG:
            failure = Failure(
                code="ERR_TIMEOUT",
                message=f"{self.name} ran past its {request.timeout_s:g} s deadline",
                details={"source": "deadline", "agent": self.name},
            )
        else:
            failure = step if isinstance(step, Failure) else Failure(code=step)
        return AgentResult.failed(failure, output=self.partial_output)
