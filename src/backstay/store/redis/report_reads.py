"""``RedisReportReads``: the ``ReportReads`` of ``RedisTaskStore`` (see
``backstay.engine.report_reads``).

A page of tasks is one Lua script (each task's spec and row, and its attempts' hash); a
page of attempts is one Lua script too (a range of the ``attempt-order`` list and the rows
it names): one round trip and one reply per page, not a command per task. The keys a
script reads are named from its arguments, all under the tasks' hash tag (one Cluster
slot), as ``ensure_index`` does. Specs are parsed as JSON for the few fields the report
needs, never decoded into a ``TaskSpec``.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Final

from backstay.engine.report_reads import AttemptFact, AttemptTimes, TaskLine
from backstay.engine.states import TaskState
from backstay.engine.task_index import TaskFilter

if TYPE_CHECKING:
    from backstay.store.redis._client import RedisConnection

__all__ = ["RedisReportReads"]

# KEYS: attempt-order (unread: it takes the script to the node of the tasks' slot);
# ARGV: the key prefix of tasks ("…:t:"), of attempts ("…:a:"), then operation ids.
# Per task: its spec, its row (false when gone), its attempts' hash as a flat list.
_LINES: Final = """
local out = {}
for i = 3, #ARGV do
  local found = redis.call('HMGET', ARGV[1] .. ARGV[i], 'spec', 'row')
  out[#out + 1] = found[1]
  out[#out + 1] = found[2]
  out[#out + 1] = redis.call('HGETALL', ARGV[2] .. ARGV[i])
end
return out
"""
# KEYS: attempt-order; ARGV: first, last index, the key prefix of attempts ("…:a:").
# Per entry of the range: the attempt's row (false when gone).
_ATTEMPTS: Final = """
local entries = redis.call('LRANGE', KEYS[1], ARGV[1], ARGV[2])
local out = {}
for i, entry in ipairs(entries) do
  local at = string.find(entry, '\\31', 1, true)
  out[i] = redis.call('HGET', ARGV[3] .. string.sub(entry, 1, at - 1), string.sub(entry, at + 1))
end
return out
"""


def _line(op: str, spec_raw: bytes | str, row_raw: bytes | str, flat: list[Any]) -> TaskLine:
    """The line of ``op`` from its spec, row and attempts' hash (``[number, row, …]``)."""
    spec = json.loads(spec_raw)
    row = json.loads(row_raw)
    result = {} if row[5] is None else json.loads(row[5])
    numbered = sorted(zip(flat[::2], flat[1::2], strict=True), key=lambda i: int(i[0]))
    attempts = [json.loads(raw) for _, raw in numbered]
    usages = [json.loads(a[10]) for a in attempts if a[10] is not None]
    fallbacks = spec.get("fallbacks")
    last = attempts[-1] if attempts else None
    return TaskLine(
        operation_id=op,
        task_id=spec["task_id"],
        task_run_id=op.rpartition(":")[2],
        state=TaskState(row[0]),
        reason=row[1],
        adapter=spec["adapter"],
        model=spec["model"],
        fallbacks=None if fallbacks is None else json.dumps(fallbacks, sort_keys=True),
        requested_model=result.get("requested_model") if isinstance(result, dict) else None,
        answered_model=result.get("model") if isinstance(result, dict) else None,
        attempts=len(attempts),
        failed_attempts=sum(1 for a in attempts if a[7] is not None),
        last_output_dir=None if last is None else last[3],
        last_candidate=None if last is None else last[11],
        input_tokens=sum(u.get("input_tokens", 0) for u in usages),
        output_tokens=sum(u.get("output_tokens", 0) for u in usages),
        cache_read_tokens=sum(u.get("cache_read_tokens", 0) for u in usages),
        cache_write_tokens=sum(u.get("cache_write_tokens", 0) for u in usages),
        cost_usd=sum(u.get("cost_usd") or 0.0 for u in usages),
    )


class RedisReportReads:
    """The report's reads; mixed into ``RedisTaskStore`` (its connection and keys)."""

    _conn: RedisConnection
    _attempt_order: str

    if TYPE_CHECKING:

        def _ids(self, where: TaskFilter) -> list[str]: ...
        def _task_key(self, operation_id: str) -> str: ...
        def _attempt_key(self, operation_id: str) -> str: ...

    def report_snapshot(self) -> AbstractContextManager[None]:
        """Nothing to hold: each page is read as it stands (a task that moves meanwhile
        may be counted in one state and listed in the next)."""
        return contextlib.nullcontext()

    def _script(self, source: str, keys: list[str], args: list[Any]) -> list[Any]:
        script = self._conn.client.register_script(source)
        return list(self._conn.call(lambda client: script(keys=keys, args=args, client=client)))

    def report_lines(self, where: TaskFilter, *, size: int) -> Iterator[tuple[TaskLine, ...]]:
        ids = self._ids(where)
        prefixes = [self._conn.key("tasks", "t", ""), self._conn.key("tasks", "a", "")]
        for start in range(0, len(ids), size):
            chunk = ids[start : start + size]
            found = self._script(_LINES, [self._attempt_order], [*prefixes, *chunk])
            lines = (
                _line(op, spec, row, attempts)
                for op, spec, row, attempts in zip(
                    chunk, found[::3], found[1::3], found[2::3], strict=True
                )
                if spec is not None and row is not None
            )
            # A task that moved out of the selected states since its id was read is left out.
            page = tuple(
                line for line in lines if where.states is None or line.state in where.states
            )
            if page:
                yield page

    def _attempt_rows(self, size: int) -> Iterator[list[list[Any]]]:
        """Pages of attempt rows, in the order the attempts were made."""
        prefix = self._conn.key("tasks", "a", "")
        start = 0
        while True:
            found = self._script(
                _ATTEMPTS, [self._attempt_order], [start, start + size - 1, prefix]
            )
            if not found:
                return
            yield [json.loads(raw) for raw in found if raw is not None]
            if len(found) < size:
                return
            start += size

    def attempt_facts(self, *, size: int) -> Iterator[tuple[AttemptFact, ...]]:
        for page in self._attempt_rows(size):
            facts = []
            for row in page:
                failure = None if row[7] is None else json.loads(row[7])
                facts.append(
                    AttemptFact(
                        started_at=row[4],
                        ended_at=row[5],
                        outcome=row[6],
                        delay_s=row[8],
                        code=None if failure is None else failure["code"],
                        retry_after=failure is not None
                        and failure.get("retry_after_ms") is not None,
                    )
                )
            yield tuple(facts)

    def attempt_times(self, *, size: int) -> Iterator[tuple[AttemptTimes, ...]]:
        for page in self._attempt_rows(size):
            yield tuple(AttemptTimes(row[4], row[5], row[6], row[8]) for row in page)
