"""``ReportReads``: what the HTML report reads of a task store, without decoding every spec.

A report lists every task and adds up every attempt. Decoding each task's spec into a
``TaskSpec`` (and each attempt into an ``AttemptRecord``) was most of its cost on a large
batch, and holding them all most of its memory. A store that implements these reads hands
out light rows instead, a page at a time, taken from its stored columns (the SQLite store
lets SQLite pick the few fields out of the JSON; the Redis store's Lua scripts pick them in
Redis and answer one JSON text per page):

* ``report_lines(where, size=N)``: a ``TaskLine`` per task ``where`` selects, in
  registration order: its ids, state and reason, the adapter, model and fallbacks of its
  spec, the models its result names, and its attempts added up (how many, how many
  failed, the last one's log folder and candidate, their tokens and cost);
* ``attempt_facts(size=N)``: an ``AttemptFact`` per attempt, in the order they were
  made: its times, outcome, delay and failure code;
* ``attempt_times(size=N)``: the same attempts' times, outcome and delay only (the
  timeline's second pass);
* ``attempts_of`` and ``escalations(open_only=True)`` from the ``TaskStore``: the whole
  records, read only for the tasks the report details (those that failed an attempt or
  did not succeed) and the open escalations;
* ``report_snapshot()``: a context the reads are made in; SQLite holds one read
  transaction in it (the report is of one moment of the file), Redis nothing.

Rows are named tuples rather than frozen dataclasses: a report makes one per task and one
per attempt, and building a tuple costs a fraction of a dataclass's ``__init__``.
Times are Unix seconds, as stored.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from contextlib import AbstractContextManager
from typing import NamedTuple, Protocol, runtime_checkable

from backstay.engine.records import AttemptRecord, Escalation
from backstay.engine.states import TaskState
from backstay.engine.task_index import TaskFilter

__all__ = ["AttemptFact", "AttemptTimes", "ReportReads", "TaskLine"]


class TaskLine(NamedTuple):
    """One task as the report lists it. ``fallbacks`` is the JSON text of its spec's
    fallback candidates (``None``: none); ``requested_model`` and ``answered_model`` are
    the ``requested_model`` and ``model`` its stored result names (``None``: not named)."""

    operation_id: str
    task_id: str
    task_run_id: str
    state: TaskState
    reason: str
    adapter: str
    model: str
    fallbacks: str | None
    requested_model: object
    answered_model: object
    attempts: int
    failed_attempts: int
    last_output_dir: str | None
    last_candidate: str | None
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost_usd: float

    @property
    def tokens(self) -> int:
        """Prompt tokens (input, cache reads and writes) plus output tokens, over its
        attempts."""
        return (
            self.input_tokens + self.cache_read_tokens + self.cache_write_tokens
            + self.output_tokens
        )  # fmt: skip


class AttemptTimes(NamedTuple):
    """When an attempt started and ended (``None``: still running), how it ended, and the
    delay chosen after it."""

    started_at: float
    ended_at: float | None
    outcome: str
    delay_s: float | None


class AttemptFact(NamedTuple):
    """One attempt as the report adds it up: its times, outcome and delay, ``code`` its
    failure's code (``None``: no failure), ``retry_after`` whether that failure carried a
    provider's wait."""

    started_at: float
    ended_at: float | None
    outcome: str
    delay_s: float | None
    code: str | None
    retry_after: bool


@runtime_checkable
class ReportReads(Protocol):
    """The reads of a task store the report is made from; see the module docstring."""

    def report_snapshot(self) -> AbstractContextManager[None]: ...

    def state_counts(self) -> dict[TaskState, int]: ...

    def report_lines(self, where: TaskFilter, *, size: int) -> Iterator[tuple[TaskLine, ...]]: ...

    def attempt_facts(self, *, size: int) -> Iterator[tuple[AttemptFact, ...]]: ...

    def attempt_times(self, *, size: int) -> Iterator[tuple[AttemptTimes, ...]]: ...

    def attempts_of(self, operation_ids: Collection[str]) -> tuple[AttemptRecord, ...]: ...

    def escalations(self, *, open_only: bool = False) -> tuple[Escalation, ...]: ...
