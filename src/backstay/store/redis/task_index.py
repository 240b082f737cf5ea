"""``RedisTaskIndex``: the ``TaskIndex`` reads of ``RedisTaskStore`` (see
``backstay.engine.task_index``), and the keys that keep them.

Beside the task keys, under the same hash tag ``{ns:tasks}``:

* ``counts``: a hash of state → tasks in it;
* ``in:<state>``: a sorted set of the operation ids in that state, scored by their
  registration number (``seq``, also a field of the task's hash);
* ``index``: the version of this layout, written once the counts and sets hold every task.

Registering a task adds it to ``counts`` and ``in:pending`` in its Lua script; every move
changes them in the ``MULTI``/``EXEC`` that writes the task's row (``TaskMove.write``), so
they never disagree with the rows, even when a process is killed between two moves. A
namespace written before they existed is indexed once, by one Lua script, when a store
first opens it (``ensure_index``).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator
from typing import TYPE_CHECKING, Any, Final

from backstay.engine.records import AttemptRecord, EscalationStatus, TaskRecord
from backstay.engine.states import TaskState
from backstay.engine.task_index import TaskFilter
from backstay.idempotency.ids import parse_operation_id
from backstay.store import _task_rows as rows

if TYPE_CHECKING:
    from redis.client import Pipeline

    from backstay.store.redis._client import RedisConnection

__all__ = ["INDEX_VERSION", "RedisTaskIndex", "queue_move", "state_set", "text"]

INDEX_VERSION: Final = "1"
# KEYS: order, counts, index marker; ARGV: the version, the key prefix of tasks ("…:t:"),
# the key prefix of the state sets ("…:in:"). Counts every task's state from its row.
_ENSURE: Final = """
if redis.call('GET', KEYS[3]) then return 0 end
redis.call('DEL', KEYS[2])
local ops = redis.call('LRANGE', KEYS[1], 0, -1)
for i, op in ipairs(ops) do
  local row = redis.call('HGET', ARGV[2] .. op, 'row')
  if row then
    local state = cjson.decode(row)[1]
    redis.call('HSET', ARGV[2] .. op, 'seq', i)
    redis.call('HINCRBY', KEYS[2], state, 1)
    redis.call('ZADD', ARGV[3] .. state, i, op)
  end
end
redis.call('SET', KEYS[3], ARGV[1])
return #ops
"""


def text(raw: bytes | str) -> str:
    return raw.decode() if isinstance(raw, bytes) else raw


def state_set(conn: RedisConnection, state: str) -> str:
    """The key of the sorted set of tasks in ``state``."""
    return conn.key("tasks", "in", state)


def queue_move(
    pipe: Pipeline, conn: RedisConnection, op: str, *, seq: int, before: str, after: str
) -> None:
    """Queue (after ``MULTI``) the index changes of ``op`` moving ``before`` → ``after``."""
    if before == after:
        return
    counts = conn.key("tasks", "counts")
    pipe.hincrby(counts, before, -1)
    pipe.hincrby(counts, after, 1)
    pipe.zrem(state_set(conn, before), op)
    pipe.zadd(state_set(conn, after), {op: seq})


def _task_id(operation_id: str) -> str:
    try:
        return parse_operation_id(operation_id).task_id
    except ValueError:
        return operation_id


class RedisTaskIndex:
    """The index reads; mixed into ``RedisTaskStore`` (its connection and decoders)."""

    _conn: RedisConnection
    _order: str
    _esc: str

    if TYPE_CHECKING:

        def _task_key(self, operation_id: str) -> str: ...
        def _attempt_key(self, operation_id: str) -> str: ...
        def _decode_task(self, spec: bytes | str, row: bytes | str) -> TaskRecord: ...

    def ensure_index(self) -> None:
        """Index a namespace written before the index existed (once; a no-op after)."""
        conn = self._conn
        keys = [self._order, conn.key("tasks", "counts"), conn.key("tasks", "index")]
        args = [INDEX_VERSION, conn.key("tasks", "t", ""), conn.key("tasks", "in", "")]
        conn.call(lambda client: client.eval(_ENSURE, len(keys), *keys, *args))

    def state_counts(self) -> dict[TaskState, int]:
        key = self._conn.key("tasks", "counts")
        found = self._conn.call(lambda client: client.hgetall(key))
        counts = {text(state): int(n) for state, n in found.items()}
        return {state: counts.get(state.value, 0) for state in TaskState}

    def _ids(self, where: TaskFilter) -> list[str]:
        """The operation ids ``where`` selects, in registration order."""
        conn = self._conn
        if where.states is None:
            ids = [text(op) for op in conn.call(lambda c: c.lrange(self._order, 0, -1))]
        else:
            keys = [state_set(conn, state.value) for state in sorted(where.states)]

            def read(client: Any) -> list[Any]:
                pipe = client.pipeline(transaction=False)
                for key in keys:
                    pipe.zrange(key, 0, -1, withscores=True)
                return list(pipe.execute())

            scored = [(score, text(op)) for found in conn.call(read) for op, score in found]
            ids = [op for _, op in sorted(scored)]
        if where.task_glob is not None:
            only = TaskFilter(task_glob=where.task_glob)
            ids = [op for op in ids if only.admits(TaskState.PENDING, _task_id(op))]
        return ids

    def count(self, where: TaskFilter) -> int:
        if where.task_glob is None:
            counts = self.state_counts()
            return sum(n for s, n in counts.items() if where.states is None or s in where.states)
        return len(self._ids(where))

    def pages(self, where: TaskFilter, *, size: int) -> Iterator[tuple[TaskRecord, ...]]:
        ids = self._ids(where)
        for start in range(0, len(ids), size):
            chunk = ids[start : start + size]

            def read(client: Any, chunk: list[str] = chunk) -> list[Any]:
                pipe = client.pipeline(transaction=False)
                for op in chunk:
                    pipe.hmget(self._task_key(op), "spec", "row")
                return list(pipe.execute())

            found = self._conn.call(read)
            # A task that moved out of the selected states since its id was read is left out.
            records = (self._decode_task(s, r) for s, r in found if s is not None and r is not None)
            page = tuple(r for r in records if where.states is None or r.state in where.states)
            if page:
                yield page

    def attempts_of(self, operation_ids: Collection[str]) -> tuple[AttemptRecord, ...]:
        ids = list(operation_ids)

        def read(client: Any) -> list[Any]:
            pipe = client.pipeline(transaction=False)
            for op in ids:
                pipe.hgetall(self._attempt_key(op))
            return list(pipe.execute())

        found: list[AttemptRecord] = []
        for by_number in self._conn.call(read):
            ordered = sorted(by_number.items(), key=lambda item: int(item[0]))
            found += [rows.decode_attempt(tuple(json.loads(raw))) for _, raw in ordered]
        found.sort(key=lambda a: a.started_at)
        return tuple(found)

    def open_escalation_count(self) -> int:
        found = self._conn.call(lambda client: client.hvals(self._esc))
        status = EscalationStatus.OPEN.value
        return sum(1 for raw in found if json.loads(raw)[6] == status)
