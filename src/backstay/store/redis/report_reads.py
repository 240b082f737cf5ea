"""``RedisReportReads``: the ``ReportReads`` of ``RedisTaskStore`` (see
``backstay.engine.report_reads``).

A page of tasks is one pipeline (each task's spec and row, and its attempts' hash); a page
of attempts is one range of the ``attempt-order`` list and one pipeline of their rows.
Specs are parsed as JSON for the few fields the report needs, never decoded into a
``TaskSpec``.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from backstay.engine.report_reads import AttemptFact, AttemptTimes, TaskLine
from backstay.engine.states import TaskState
from backstay.engine.task_index import TaskFilter
from backstay.store.redis._task_move import SEP, text

if TYPE_CHECKING:
    from backstay.store.redis._client import RedisConnection

__all__ = ["RedisReportReads"]


def _line(op: str, spec_raw: bytes | str, row_raw: bytes | str, found: dict[Any, Any]) -> TaskLine:
    spec = json.loads(spec_raw)
    row = json.loads(row_raw)
    result = {} if row[5] is None else json.loads(row[5])
    attempts = [json.loads(raw) for _, raw in sorted(found.items(), key=lambda i: int(i[0]))]
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

    def report_lines(self, where: TaskFilter, *, size: int) -> Iterator[tuple[TaskLine, ...]]:
        ids = self._ids(where)
        for start in range(0, len(ids), size):
            chunk = ids[start : start + size]

            def read(client: Any, chunk: list[str] = chunk) -> list[Any]:
                pipe = client.pipeline(transaction=False)
                for op in chunk:
                    pipe.hmget(self._task_key(op), "spec", "row")
                    pipe.hgetall(self._attempt_key(op))
                return list(pipe.execute())

            found = self._conn.call(read)
            lines = (
                _line(op, spec, row, attempts)
                for op, (spec, row), attempts in zip(chunk, found[::2], found[1::2], strict=True)
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
        start = 0
        while True:

            def span(client: Any, first: int = start) -> list[Any]:
                return list(client.lrange(self._attempt_order, first, first + size - 1))

            entries = [text(e).split(SEP) for e in self._conn.call(span)]
            if not entries:
                return

            def read(client: Any, entries: list[list[str]] = entries) -> list[Any]:
                pipe = client.pipeline(transaction=False)
                for op, number in entries:
                    pipe.hget(self._attempt_key(op), number)
                return list(pipe.execute())

            yield [json.loads(raw) for raw in self._conn.call(read) if raw is not None]
            if len(entries) < size:
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
