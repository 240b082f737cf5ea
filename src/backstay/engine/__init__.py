"""The durable task engine: task specs and states, the batch runner, resume rules, the
human escalation queue and batch summaries. See ``docs/design/engine.md``.

* ``states``: ``TaskState``, the allowed transitions, ``outcome_for`` (failure → state);
* ``task``: ``TaskSpec``, one task of a batch and its ``operation_id``;
* ``taskstore``: the ``TaskStore`` protocol; ``stores``: ``StoreBundle``, the stores an
  engine runs on (their SQLite and Redis forms are in ``backstay.store``);
* ``runner``: ``Engine`` (``run``, ``resume`` and their sync forms);
* ``executor``: ``Executor``, where the tasks are driven when not in the engine's process
  (``backstay.executors.RayExecutor``);
* ``driver``: one task's attempts; ``decision``: a failed attempt's next state;
* ``resume``: how a stored task is taken up;
* ``circuits``: ``CircuitGate``, the circuit breakers asked before each attempt;
  ``circuit_log``: ``CircuitLog``, what they did (trips, waits);
* ``budgets``: ``BudgetGate``, the spending budgets asked before each attempt;
  ``spend_ledger``: ``SpendLedger``, what attempts spent and reserved;
* ``controls``: ``TaskControls``, an operator's retry and cancel; ``suite_diff``: what
  an edited suite would change in the stored tasks;
* ``escalations``: ``EscalationQueue``; ``summary``: ``Summary``; ``events``: its events;
* ``suite_batch``: ``SuiteBatch``, a suite run as one batch in a state directory.

``SQLiteTaskStore``, ``SQLiteSpendLedger``, ``SQLiteCircuitLog`` and ``STATE_FILE`` moved
to ``backstay.store``; importing them from here still works for one release.
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any, Final

from backstay._lazy_names import listed_names, load_name

if TYPE_CHECKING:
    from backstay.engine.budgets import BudgetExceeded, BudgetGate
    from backstay.engine.circuit_log import CircuitChange, CircuitEntry
    from backstay.engine.circuits import BreakerKeyFn, CircuitGate, breaker_key
    from backstay.engine.controls import Moved, TaskControls
    from backstay.engine.escalations import ACTION_STATES, EscalationQueue
    from backstay.engine.events import (
        AttemptEnded,
        AttemptFailedEnded,
        EscalationResolved,
        TaskCancelled,
        TaskDeferred,
        TaskEscalated,
        TaskFailed,
        TaskFellBack,
        TaskPaused,
        TaskReopened,
        TaskResumed,
        TaskStarted,
        TaskSucceeded,
    )
    from backstay.engine.executor import Executor
    from backstay.engine.records import (
        AttemptOutcome,
        AttemptRecord,
        Escalation,
        EscalationStatus,
        ResolveAction,
        TaskRecord,
    )
    from backstay.engine.resume import StartPlan, StartStep, plan_start
    from backstay.engine.runner import DEFAULT_BREAKER, DEFAULT_CONCURRENCY, Engine
    from backstay.engine.states import (
        REOPENABLE,
        TERMINAL,
        TRANSITIONS,
        InvalidTransition,
        Outcome,
        TaskState,
        outcome_for,
        transition,
    )
    from backstay.engine.stores import StoreBundle
    from backstay.engine.suite_batch import (
        BATCH_FILE,
        WORKSPACE_DIR,
        BatchIdentity,
        BatchRun,
        SuiteBatch,
        read_identity,
        suite_adapters,
    )
    from backstay.engine.suite_diff import SpecChange, SuiteDiff, suite_diff
    from backstay.engine.summary import Summary, TaskReport
    from backstay.engine.task import TaskSpec, task_run_id
    from backstay.engine.taskstore import TaskStore
    from backstay.store.sqlite.circuit_log import SQLiteCircuitLog as SQLiteCircuitLog
    from backstay.store.sqlite.spend import SQLiteSpendLedger as SQLiteSpendLedger
    from backstay.store.sqlite.tasks import STATE_FILE as STATE_FILE
    from backstay.store.sqlite.tasks import SQLiteTaskStore as SQLiteTaskStore

__all__ = [
    "ACTION_STATES",
    "BATCH_FILE",
    "DEFAULT_BREAKER",
    "DEFAULT_CONCURRENCY",
    "REOPENABLE",
    "TERMINAL",
    "TRANSITIONS",
    "WORKSPACE_DIR",
    "AttemptEnded",
    "AttemptFailedEnded",
    "AttemptOutcome",
    "AttemptRecord",
    "BatchIdentity",
    "BatchRun",
    "BreakerKeyFn",
    "BudgetExceeded",
    "BudgetGate",
    "CircuitChange",
    "CircuitEntry",
    "CircuitGate",
    "Engine",
    "Escalation",
    "EscalationQueue",
    "EscalationResolved",
    "EscalationStatus",
    "Executor",
    "InvalidTransition",
    "Moved",
    "Outcome",
    "ResolveAction",
    "SpecChange",
    "StartPlan",
    "StartStep",
    "StoreBundle",
    "SuiteBatch",
    "SuiteDiff",
    "Summary",
    "TaskCancelled",
    "TaskControls",
    "TaskDeferred",
    "TaskEscalated",
    "TaskFailed",
    "TaskFellBack",
    "TaskPaused",
    "TaskRecord",
    "TaskReopened",
    "TaskReport",
    "TaskResumed",
    "TaskSpec",
    "TaskStarted",
    "TaskState",
    "TaskStore",
    "TaskSucceeded",
    "breaker_key",
    "outcome_for",
    "plan_start",
    "read_identity",
    "suite_adapters",
    "suite_diff",
    "task_run_id",
    "transition",
]

# Where each name lives: loaded on first use (``import backstay.engine`` loads none of them,
# so ``from backstay.engine import TaskState`` costs the states module, not the runner).
_LAZY: Final = {
    "ACTION_STATES": "backstay.engine.escalations",
    "AttemptEnded": "backstay.engine.events",
    "AttemptFailedEnded": "backstay.engine.events",
    "AttemptOutcome": "backstay.engine.records",
    "AttemptRecord": "backstay.engine.records",
    "BATCH_FILE": "backstay.engine.suite_batch",
    "BatchIdentity": "backstay.engine.suite_batch",
    "BatchRun": "backstay.engine.suite_batch",
    "BreakerKeyFn": "backstay.engine.circuits",
    "BudgetExceeded": "backstay.engine.budgets",
    "BudgetGate": "backstay.engine.budgets",
    "CircuitChange": "backstay.engine.circuit_log",
    "CircuitEntry": "backstay.engine.circuit_log",
    "CircuitGate": "backstay.engine.circuits",
    "DEFAULT_BREAKER": "backstay.engine.runner",
    "DEFAULT_CONCURRENCY": "backstay.engine.runner",
    "Engine": "backstay.engine.runner",
    "Escalation": "backstay.engine.records",
    "EscalationQueue": "backstay.engine.escalations",
    "EscalationResolved": "backstay.engine.events",
    "EscalationStatus": "backstay.engine.records",
    "Executor": "backstay.engine.executor",
    "InvalidTransition": "backstay.engine.states",
    "Moved": "backstay.engine.controls",
    "Outcome": "backstay.engine.states",
    "REOPENABLE": "backstay.engine.states",
    "ResolveAction": "backstay.engine.records",
    "SpecChange": "backstay.engine.suite_diff",
    "StartPlan": "backstay.engine.resume",
    "StartStep": "backstay.engine.resume",
    "StoreBundle": "backstay.engine.stores",
    "SuiteBatch": "backstay.engine.suite_batch",
    "SuiteDiff": "backstay.engine.suite_diff",
    "Summary": "backstay.engine.summary",
    "TERMINAL": "backstay.engine.states",
    "TRANSITIONS": "backstay.engine.states",
    "TaskCancelled": "backstay.engine.events",
    "TaskControls": "backstay.engine.controls",
    "TaskDeferred": "backstay.engine.events",
    "TaskEscalated": "backstay.engine.events",
    "TaskFailed": "backstay.engine.events",
    "TaskFellBack": "backstay.engine.events",
    "TaskPaused": "backstay.engine.events",
    "TaskRecord": "backstay.engine.records",
    "TaskReopened": "backstay.engine.events",
    "TaskReport": "backstay.engine.summary",
    "TaskResumed": "backstay.engine.events",
    "TaskSpec": "backstay.engine.task",
    "TaskStarted": "backstay.engine.events",
    "TaskState": "backstay.engine.states",
    "TaskStore": "backstay.engine.taskstore",
    "TaskSucceeded": "backstay.engine.events",
    "WORKSPACE_DIR": "backstay.engine.suite_batch",
    "breaker_key": "backstay.engine.circuits",
    "outcome_for": "backstay.engine.states",
    "plan_start": "backstay.engine.resume",
    "read_identity": "backstay.engine.suite_batch",
    "suite_adapters": "backstay.engine.suite_batch",
    "suite_diff": "backstay.engine.suite_diff",
    "task_run_id": "backstay.engine.task",
    "transition": "backstay.engine.states",
}

_MOVED: Final = {
    "STATE_FILE": "backstay.store",
    "SQLiteCircuitLog": "backstay.store",
    "SQLiteSpendLedger": "backstay.store",
    "SQLiteTaskStore": "backstay.store",
}


class _Package(types.ModuleType):
    """This package, whose name ``suite_diff`` is the function, not its submodule: Python
    sets a package's attribute to each submodule it imports, which would put the module in
    the function's place (as importing every name up front used to prevent)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _SHADOWED and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


# The names that are also a submodule's (``suite_diff``).
_SHADOWED: Final = frozenset(
    name for name, module in _LAZY.items() if module == f"{__name__}.{name}"
)
sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> Any:
    # A name of the engine, or one moved to backstay.store (the SQLite wing; kept here for
    # one release): imported on first use.
    return load_name(globals(), name, _LAZY, _MOVED)


def __dir__() -> list[str]:
    return listed_names(globals())
