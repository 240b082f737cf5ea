"""``RedisTaskStore``: tasks, attempts and escalations in Redis, so that ``status``,
``resume``, ``escalations`` and ``report`` work from any machine.

Every key lives under one hash tag, ``{ns:tasks}`` (one Cluster slot: a move touches the
task, its attempts and maybe an escalation together):

* ``t:<operation_id>``: a hash of ``spec`` (the spec's JSON, as ``_spec_codec`` writes it:
  no secret values) and ``row`` (a JSON list: the task columns of ``_task_rows``);
* ``a:<operation_id>``: a hash of attempt number → the attempt's row (JSON list);
* ``order`` / ``attempt-order``: lists giving the registration order of tasks and attempts;
* ``esc``: a hash of escalation id → row; ``esc-seq`` hands out the ids.

Rows are the SQLite store's rows, decoded by the same ``_task_rows`` functions, so both
stores give identical records. Each change is one optimistic transaction
(``backstay.store.redis._tx``) that reads what is stored, checks the move with
``transition()`` against the state *as stored*, and writes everything it implies in one
``MULTI``/``EXEC``; a refused move raises before anything is queued. Registering is one
Lua script (a spec is updated, a known task keeps its state).

A change whose reply was lost (Redis went away after ``EXEC``; the connection's ``wait``
mode then runs it again) finds itself already applied — the same attempt id, the same
end time, the same state since the same moment — and answers as if it had just applied,
instead of refusing its own move.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final, TypeVar

from redis.client import Pipeline

from backstay.clock import SYSTEM_CLOCK
from backstay.engine._spec_codec import encode_spec
from backstay.engine.controls import replacing
from backstay.engine.records import (
    AttemptEnd,
    AttemptOutcome,
    AttemptRecord,
    Escalation,
    EscalationStatus,
    NewEscalation,
    ResolveAction,
    StateChange,
    TaskRecord,
)
from backstay.engine.states import TaskState, check_reopen, resolution, transition
from backstay.engine.task import TaskSpec
from backstay.errors import ConfigError
from backstay.store import _task_rows as rows
from backstay.store.redis._client import RedisConnection
from backstay.store.redis._register_pages import RedisRegistration, register_pages
from backstay.store.redis._task_move import SEP, TaskMove, text
from backstay.store.redis._tx import transact
from backstay.store.redis.report_reads import RedisReportReads
from backstay.store.redis.task_index import RedisTaskIndex, state_set

__all__ = ["RedisTaskStore"]

T = TypeVar("T")
# KEYS: order, counts, the pending set, then each task's key; ARGV: per task
# operation_id, spec, new row. A new task is counted and indexed (``task_index``).
_REGISTER: Final = """
for i = 4, #KEYS do
  local op, spec, row = ARGV[3 * i - 11], ARGV[3 * i - 10], ARGV[3 * i - 9]
  redis.call('HSET', KEYS[i], 'spec', spec)
  if redis.call('HSETNX', KEYS[i], 'row', row) == 1 then
    local seq = redis.call('RPUSH', KEYS[1], op)
    redis.call('HSET', KEYS[i], 'seq', seq)
    redis.call('HINCRBY', KEYS[2], 'pending', 1)
    redis.call('ZADD', KEYS[3], seq, op)
  end
end
return #KEYS - 3
"""


def _new_row(at: _dt.datetime) -> list[Any]:
    when = at.timestamp()
    return ["pending", "registered", 0, 0, None, None, when, when]


class RedisTaskStore(RedisRegistration, RedisTaskIndex, RedisReportReads):
    """The ``TaskStore`` of one Redis namespace. ``secrets`` supplies the secret
    environment variables of specs read back (never stored)."""

    def __init__(self, conn: RedisConnection, *, secrets: Mapping[str, str] | None = None) -> None:
        self._conn = conn
        self._decode_spec = rows.spec_decoder(dict(secrets or {}))
        self._order = conn.key("tasks", "order")
        self._attempt_order = conn.key("tasks", "attempt-order")
        self._esc = conn.key("tasks", "esc")
        self._esc_seq = conn.key("tasks", "esc-seq")
        self._register = conn.client.register_script(_REGISTER)
        self.ensure_index()

    def _task_key(self, operation_id: str) -> str:
        return self._conn.key("tasks", "t", operation_id)

    def _attempt_key(self, operation_id: str) -> str:
        return self._conn.key("tasks", "a", operation_id)

    # -- decoding ---------------------------------------------------------------------

    def _decode_task(self, spec: bytes | str, row: bytes | str) -> TaskRecord:
        return rows.decode_task((text(spec), *json.loads(row)), self._decode_spec)

    @staticmethod
    def _decode_escalation(raw: bytes | str) -> Escalation:
        return rows.decode_escalation(tuple(json.loads(raw)))

    # -- reads ------------------------------------------------------------------------

    def task(self, operation_id: str) -> TaskRecord | None:
        key = self._task_key(operation_id)
        spec, row = self._conn.call(lambda client: client.hmget(key, "spec", "row"))
        return None if spec is None or row is None else self._decode_task(spec, row)

    def tasks(self) -> tuple[TaskRecord, ...]:
        def read(client: Any) -> list[Any]:
            ops = [text(op) for op in client.lrange(self._order, 0, -1)]
            pipe = client.pipeline(transaction=False)
            for op in ops:
                pipe.hmget(self._task_key(op), "spec", "row")
            return list(pipe.execute())

        return tuple(self._decode_task(spec, row) for spec, row in self._conn.call(read))

    def attempts(self, operation_id: str | None = None) -> tuple[AttemptRecord, ...]:
        if operation_id is not None:
            key = self._attempt_key(operation_id)
            found = self._conn.call(lambda client: client.hgetall(key))
            ordered = sorted(found.items(), key=lambda item: int(item[0]))
            return tuple(rows.decode_attempt(tuple(json.loads(raw))) for _, raw in ordered)

        def read(client: Any) -> list[Any]:
            entries = [text(e).split(SEP) for e in client.lrange(self._attempt_order, 0, -1)]
            pipe = client.pipeline(transaction=False)
            for op, number in entries:
                pipe.hget(self._attempt_key(op), number)
            return list(pipe.execute())

        return tuple(
            rows.decode_attempt(tuple(json.loads(raw)))
            for raw in self._conn.call(read)
            if raw is not None
        )

    def escalations(self, *, open_only: bool = False) -> tuple[Escalation, ...]:
        found = self._conn.call(lambda client: client.hgetall(self._esc))
        items = sorted((self._decode_escalation(raw) for raw in found.values()),
                       key=lambda e: e.escalation_id)  # fmt: skip
        if open_only:
            items = [e for e in items if e.status is EscalationStatus.OPEN]
        return tuple(items)

    def escalation(self, escalation_id: int) -> Escalation | None:
        raw = self._conn.call(lambda client: client.hget(self._esc, str(escalation_id)))
        return None if raw is None else self._decode_escalation(raw)

    # -- registering ------------------------------------------------------------------

    def register(self, spec: TaskSpec, *, at: _dt.datetime) -> TaskRecord:
        return self.register_all([spec], at=at)[0]

    def register_all(
        self, specs: Sequence[TaskSpec], *, at: _dt.datetime
    ) -> tuple[TaskRecord, ...]:
        keys = [self._order, self._conn.key("tasks", "counts"), state_set(self._conn, "pending")]
        args: list[str] = []
        row = json.dumps(_new_row(at))
        for spec in specs:
            keys.append(self._task_key(spec.operation_id))
            args += [spec.operation_id, encode_spec(spec), row]
        if specs:
            self._conn.call(lambda client: self._register(keys=keys, args=args, client=client))
        found = [self.task(spec.operation_id) for spec in specs]
        return tuple(record for record in found if record is not None)

    def register_each(self, specs: Iterable[TaskSpec], *, at: _dt.datetime) -> int:
        return register_pages(self._conn, specs, row=_new_row(at), order=self._order)

    # -- changes ----------------------------------------------------------------------

    def _tx(
        self,
        operation_id: str,
        decide: Callable[[TaskMove], T],
        *,
        escalations: bool = False,
    ) -> T:
        """Run ``decide`` on a ``TaskMove`` of ``operation_id`` in one transaction."""
        tkey, akey = self._task_key(operation_id), self._attempt_key(operation_id)
        watch = [tkey, akey, *([self._esc] if escalations else [])]

        def body(pipe: Pipeline, now: float) -> T:
            del now  # every change carries its own time (the engine's clock)
            move = TaskMove(self, pipe, operation_id)
            answer = decide(move)
            move.write()
            return answer

        return transact(self._conn, watch, body, clock=SYSTEM_CLOCK)

    def begin_attempt(
        self,
        operation_id: str,
        *,
        number: int,
        attempt_id: str,
        output_dir: str,
        at: _dt.datetime,
        candidate: str | None = None,
    ) -> TaskRecord:
        def decide(move: TaskMove) -> TaskRecord:
            state, used = move.current()
            begun = move.attempts.get(number)
            if move.replaying and used == number and begun and begun[2] == attempt_id:
                return move.record()  # already applied: a replay after a lost reply
            if number != used + 1:
                raise ConfigError(
                    f"attempt {number} of {operation_id!r} is not the next one ({used} used)",
                    where="number",
                )
            transition(state, TaskState.RUNNING)
            move.apply(
                StateChange(state=TaskState.RUNNING, reason=f"running attempt {number}", at=at)
            )
            move.row[2] = number
            attempt = [operation_id, number, attempt_id, output_dir, at.timestamp(), None,
                       AttemptOutcome.RUNNING.value, None, None, None, None, candidate]  # fmt: skip
            move.attempts[number] = attempt
            move.new_attempts.append(number)
            return move.record()

        return self._tx(operation_id, decide)

    def end_attempt(
        self,
        operation_id: str,
        end: AttemptEnd,
        change: StateChange,
        *,
        escalation: NewEscalation | None = None,
    ) -> tuple[TaskRecord, Escalation | None]:
        def decide(move: TaskMove) -> tuple[TaskRecord, Escalation | None]:
            ended = move.attempts.get(end.number)
            if (
                ended is not None
                and ended[5] == end.ended_at.timestamp()
                and ended[6] == end.outcome.value
            ):
                return move.record(), move.escalation_of(change.at)  # already applied
            move.move(change)
            attempt = move.attempts.get(end.number)
            if attempt is None or attempt[6] != AttemptOutcome.RUNNING.value:
                raise ConfigError(
                    f"attempt {end.number} of {operation_id!r} is not running", where="number"
                )
            attempt[5:11] = list(rows.end_params(operation_id, end)[:6])
            move.changed_attempts.add(end.number)
            added = None
            if escalation is not None:
                added = move.escalate(escalation, change.at)
            return move.record(), added

        return self._tx(operation_id, decide, escalations=escalation is not None)

    def recover_interrupted(
        self, operation_id: str, *, at: _dt.datetime, killed: int = 0
    ) -> TaskRecord:
        def decide(move: TaskMove) -> TaskRecord:
            state, used = move.current()
            if move.applied(TaskState.RETRYING, at, reason=move.row[1]):
                return move.record()  # already applied: a replay after a lost reply
            transition(state, TaskState.RETRYING)  # only a running task may be interrupted
            for number, attempt in move.attempts.items():
                if attempt[6] == AttemptOutcome.RUNNING.value:
                    attempt[6] = AttemptOutcome.INTERRUPTED.value
                    attempt[5] = at.timestamp()
                    move.changed_attempts.add(number)
            reason = f"interrupted: the runner stopped during attempt {used}"
            if killed:
                reason += f"; {killed} process(es) it left running were killed"
            move.apply(StateChange(state=TaskState.RETRYING, reason=reason, at=at, next_run_at=at))
            return move.record()

        return self._tx(operation_id, decide)

    def change_state(
        self, operation_id: str, change: StateChange, *, close_escalations: str | None = None
    ) -> TaskRecord:
        def decide(move: TaskMove) -> TaskRecord:
            if move.applied(change.state, change.at, reason=change.reason):
                return move.record()  # already applied: a replay after a lost reply
            move.move(change)
            if close_escalations is not None:
                for item in move.open_escalations():
                    move.resolve_escalation(item, ResolveAction.RESUME, close_escalations,
                                            change.at, "engine")  # fmt: skip
            return move.record()

        return self._tx(operation_id, decide, escalations=close_escalations is not None)

    def resolve(
        self,
        escalation_id: int,
        *,
        action: ResolveAction,
        note: str,
        by: str,
        change: StateChange,
    ) -> tuple[Escalation, TaskRecord]:
        found = self.escalation(escalation_id)
        if found is None:
            raise ConfigError(f"no escalation {escalation_id}", where="escalation_id")

        def decide(move: TaskMove) -> tuple[Escalation, TaskRecord]:
            raw = move.pipe.hget(self._esc, str(escalation_id))
            if raw is None:
                raise ConfigError(f"no escalation {escalation_id}", where="escalation_id")
            current = self._decode_escalation(raw)
            if (
                move.replaying
                and current.status is EscalationStatus.RESOLVED
                and current.resolved_at == change.at
                and (current.action, current.resolved_by) == (action, by)
            ):
                return current, move.record()  # already applied: a replay after a lost reply
            if current.status is EscalationStatus.RESOLVED:
                raise ConfigError(
                    f"escalation {escalation_id} was already resolved ({current.action})",
                    where="escalation_id",
                )
            if resolution(move.current()[0], change.state) is not None:
                move.apply(change)
            resolved = move.resolve_escalation(current, action, note, change.at, by)
            return resolved, move.record()

        return self._tx(found.operation_id, decide, escalations=True)

    def reopen(
        self, operation_id: str, change: StateChange, *, spec: TaskSpec | None = None
    ) -> TaskRecord:
        encoded = None if spec is None else encode_spec(replacing(spec, operation_id))

        def decide(move: TaskMove) -> TaskRecord:
            if move.applied(change.state, change.at, reason=change.reason):
                return move.record()  # already applied: a replay after a lost reply
            check_reopen(move.current()[0])
            if encoded is not None:
                move.spec, move.spec_changed = encoded, True
            move.apply(change)
            return move.record()

        return self._tx(operation_id, decide)

    def cancel(self, operation_id: str, change: StateChange) -> TaskRecord:
        def decide(move: TaskMove) -> TaskRecord:
            if move.applied(change.state, change.at, reason=change.reason):
                return move.record()  # already applied: a replay after a lost reply
            move.move(change)
            for number, attempt in move.attempts.items():
                if attempt[6] == AttemptOutcome.RUNNING.value:
                    attempt[6] = AttemptOutcome.INTERRUPTED.value
                    attempt[5] = change.at.timestamp()
                    move.changed_attempts.add(number)
            for item in move.open_escalations():
                move.resolve_escalation(item, ResolveAction.SKIP, change.reason, change.at,
                                        "operator")  # fmt: skip
            return move.record()

        return self._tx(operation_id, decide, escalations=True)

    def close(self) -> None:
        """The connection belongs to the bundle; nothing to close here."""
