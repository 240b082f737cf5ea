"""``TaskMove``: what one ``RedisTaskStore`` transaction read of a task (its row, its
attempts), the changes it decided, and their writes, queued after ``MULTI``."""

from __future__ import annotations

import datetime as _dt
import json
from typing import TYPE_CHECKING, Any, Final

from redis.client import Pipeline

from backstay.engine.records import (
    Escalation,
    EscalationStatus,
    NewEscalation,
    ResolveAction,
    StateChange,
    TaskRecord,
)
from backstay.engine.states import TaskState, transition
from backstay.errors import ConfigError
from backstay.redact import redact_mapping
from backstay.store import _task_rows as rows
from backstay.store.redis.task_index import queue_move

if TYPE_CHECKING:
    from backstay.store.redis.tasks import RedisTaskStore

__all__ = ["SEP", "TaskMove", "text"]

SEP: Final = "\x1f"


def text(raw: bytes | str) -> str:
    return raw.decode() if isinstance(raw, bytes) else raw


class TaskMove:
    """What one transaction read of a task, the changes it decided, and their writes."""

    def __init__(self, store: RedisTaskStore, pipe: Pipeline, operation_id: str) -> None:
        self.store = store
        self.pipe = pipe
        self.operation_id = operation_id
        spec, row, seq = pipe.hmget(store._task_key(operation_id), "spec", "row", "seq")
        if spec is None or row is None:
            raise ConfigError(f"no task {operation_id!r} in the store", where="operation_id")
        self.spec = text(spec)
        self.seq = 0 if seq is None else int(seq)  # its registration number (``task_index``)
        self.spec_changed = False
        self.row: list[Any] = json.loads(row)
        self.stored_state: str = self.row[0]
        found = pipe.hgetall(store._attempt_key(operation_id))
        self.attempts: dict[int, list[Any]] = {int(k): json.loads(v) for k, v in found.items()}
        self.changed_attempts: set[int] = set()
        self.new_attempts: list[int] = []
        self.escalations: dict[int, list[Any]] = {}

    def current(self) -> tuple[TaskState, int]:
        return TaskState(self.row[0]), int(self.row[2])

    def apply(self, change: StateChange) -> None:
        params = rows.change_params(self.operation_id, change)
        self.row[0], self.row[1], self.row[4], self.row[7] = (
            params[0],
            params[1],
            params[2],
            params[3],
        )
        if params[4] is not None:
            self.row[5] = params[4]
        if change.new_budget:
            self.row[3] = self.row[2]

    def move(self, change: StateChange) -> None:
        transition(self.current()[0], change.state)
        self.apply(change)

    def record(self) -> TaskRecord:
        return self.store._decode_task(self.spec, json.dumps(self.row))

    @property
    def replaying(self) -> bool:
        return self.store._conn.replaying

    def applied(self, state: TaskState, at: _dt.datetime, *, reason: str) -> bool:
        """Whether, replaying, the task already stands in ``state`` for ``reason`` since
        exactly ``at``: the move was applied and only Redis's reply was lost."""
        row = self.row
        return self.replaying and (row[0], row[1], row[7]) == (state.value, reason, at.timestamp())

    def escalation_of(self, at: _dt.datetime) -> Escalation | None:
        """The escalation this task opened at exactly ``at``, if any (a replayed end)."""
        found = self.pipe.hgetall(self.store._esc)
        for raw in found.values():
            item = self.store._decode_escalation(raw)
            if item.operation_id == self.operation_id and item.created_at == at:
                return item
        return None

    def open_escalations(self) -> list[Escalation]:
        found = self.pipe.hgetall(self.store._esc)
        items = (self.store._decode_escalation(raw) for raw in found.values())
        return sorted(
            (e for e in items
             if e.operation_id == self.operation_id and e.status is EscalationStatus.OPEN),
            key=lambda e: e.escalation_id,
        )  # fmt: skip

    def escalate(self, new: NewEscalation, at: _dt.datetime) -> Escalation:
        escalation_id = int(self.pipe.incr(self.store._esc_seq))
        row = [escalation_id, self.operation_id, self.record().task_id,
               rows.failure_json(new.failure), rows.dumps(redact_mapping(dict(new.context))),
               at.timestamp(), EscalationStatus.OPEN.value, None, "", None, None]  # fmt: skip
        self.escalations[escalation_id] = row
        return rows.decode_escalation(tuple(row))

    def resolve_escalation(
        self, item: Escalation, action: ResolveAction, note: str, at: _dt.datetime, by: str
    ) -> Escalation:
        row = [item.escalation_id, item.operation_id, item.task_id,
               rows.failure_json(item.failure), rows.dumps(dict(item.context)),
               item.created_at.timestamp(), EscalationStatus.RESOLVED.value, action.value,
               note, at.timestamp(), by]  # fmt: skip
        self.escalations[item.escalation_id] = row
        return rows.decode_escalation(tuple(row))

    def write(self) -> None:
        store, pipe, op = self.store, self.pipe, self.operation_id
        pipe.multi()
        pipe.hset(store._task_key(op), "row", json.dumps(self.row))
        queue_move(pipe, store._conn, op, seq=self.seq, before=self.stored_state, after=self.row[0])
        if self.spec_changed:
            pipe.hset(store._task_key(op), "spec", self.spec)
        akey = store._attempt_key(op)
        for number in sorted(self.changed_attempts | set(self.new_attempts)):
            pipe.hset(akey, str(number), json.dumps(self.attempts[number]))
        for number in self.new_attempts:
            pipe.rpush(store._attempt_order, f"{op}{SEP}{number}")
        for escalation_id, row in self.escalations.items():
            pipe.hset(store._esc, str(escalation_id), json.dumps(row))
