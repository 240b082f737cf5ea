"""The HTML report made a page at a time from the stores' ``ReportReads``: on a batch of
2,000 tasks (``bench/batch_states.py``, plus tasks that retried, fell back and waited for a
circuit) it is the very report the straightforward reading of every record made
(``tests/observe/report_reference.py``), on SQLite and on a real ``redis-server``; and it
decodes no task's spec to make it."""

from __future__ import annotations

import datetime as _dt
import importlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, Final

import pytest
from tests.observe import report_reference as reference

from backstay.adapters.usage import Usage
from backstay.engine import AttemptOutcome, TaskSpec, TaskState
from backstay.engine._spec_codec import decode_spec
from backstay.engine.circuit_log import CircuitChange, CircuitEntry, CircuitLog
from backstay.engine.records import AttemptEnd, StateChange
from backstay.engine.task_index import TaskFilter
from backstay.engine.taskstore import TaskStore
from backstay.failure import Failure
from backstay.fallback.candidate import Candidate
from backstay.observe.report import render_report, write_report
from backstay.observe.report._tasks import _Links
from backstay.observe.snapshot import StateReader
from backstay.store import _task_rows
from backstay.store.location import StoreLocation
from backstay.store.open import open_stores
from backstay.store.redis import report_reads as redis_report_reads
from backstay.store.sqlite.circuit_log import SQLiteCircuitLog
from backstay.store.sqlite.tasks import SQLiteTaskStore
from backstay.testing.fakeclock import FakeClock

BENCH: Final = Path(__file__).resolve().parents[2] / "bench"
TASKS: Final = 2_000
TAKEN: Final = _dt.datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=_dt.UTC)


@pytest.fixture(scope="module")
def batch_states() -> Iterator[ModuleType]:
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(BENCH))
        yield importlib.import_module("batch_states")


def _retried(store: TaskStore, workspace: Path) -> None:
    """Tasks that retried (a provider's wait, a backoff), fell back to another candidate,
    and one that answered through a fallback, with odd times and costs."""
    at = _dt.datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=_dt.UTC)
    chain = (Candidate(adapter="mock", model="spare-model"),)
    specs = [
        TaskSpec(
            workflow_id="read",
            task_id=f"r{i}",
            adapter="anthropic-api",
            model="claude-x",
            workspace=workspace,
            timeout_s=60.0,
            prompt=f"retry {i}",
            fallbacks=chain,
        )
        for i in range(3)
    ]
    store.register_all(specs, at=at)
    limited = Failure(code="ERR_HTTP_429_RATE_LIMITED", retry_after_s=2.0, message="slow down")
    for i, spec in enumerate(specs):
        op = spec.operation_id
        t = at + _dt.timedelta(seconds=10 * i + 0.1234567)
        store.begin_attempt(
            op, number=1, attempt_id=f"{op}:1", output_dir=str(workspace / op / "1"), at=t
        )
        end = AttemptEnd(
            number=1,
            outcome=AttemptOutcome.FAILED,
            ended_at=t + _dt.timedelta(seconds=1.5),
            failure=limited,
            delay_s=2.0 + i / 3,
            usage=Usage(input_tokens=7, output_tokens=1, cost_usd=0.1 / 3),
        )
        later = t + _dt.timedelta(seconds=4)
        store.end_attempt(
            op,
            end,
            StateChange(
                state=TaskState.RETRYING, reason="rate limited", at=end.ended_at, next_run_at=later
            ),
        )
        store.begin_attempt(
            op,
            number=2,
            attempt_id=f"{op}:2",
            output_dir=str(workspace / op / "2"),
            at=later,
            candidate="mock/spare-model",
        )
        if i == 0:  # the fallback failed too
            end = AttemptEnd(
                number=2,
                outcome=AttemptOutcome.FAILED,
                ended_at=later,
                failure=Failure(code="ERR_LLM_CONTENT_FILTER"),
                usage=Usage(),
            )
            change = StateChange(state=TaskState.FAILED, reason="content_policy", at=later)
        else:
            end = AttemptEnd(
                number=2,
                outcome=AttemptOutcome.SUCCEEDED,
                ended_at=later,
                usage=Usage(input_tokens=3, output_tokens=2, cache_read_tokens=5, cost_usd=0.07),
            )
            result: dict[str, Any] = {"ok": True}
            if i == 2:
                result |= {"requested_model": "claude-x", "model": "spare-model"}
            change = StateChange(
                state=TaskState.SUCCEEDED, reason="succeeded", at=later, result=result
            )
        store.end_attempt(op, end, change)


def _circuits(log: CircuitLog) -> None:
    at = _dt.datetime(2026, 1, 2, 3, 4, 9, tzinfo=_dt.UTC)
    for i, change in enumerate((CircuitChange.OPENED, CircuitChange.WAITED, CircuitChange.CLOSED)):
        wait = 1.25 if change is CircuitChange.WAITED else None
        log.add(
            CircuitEntry(
                breaker="anthropic-api/claude-x",
                change=change,
                at=at + _dt.timedelta(seconds=i),
                reason="rate_limit",
                wait_s=wait,
            )
        )


@pytest.fixture(scope="module")
def sqlite_batch(batch_states: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Path:
    state = tmp_path_factory.mktemp("report-pages") / "state"
    with SQLiteTaskStore(state) as store:
        batch_states.fill(store, TASKS, state.parent)
        _retried(store, state.parent)
    with SQLiteCircuitLog(state) as log:
        _circuits(log)
    return state


def _reference(state: Path, location: StoreLocation | None, base: Path) -> str:
    with StateReader(state, location=location, clock=FakeClock(wall=TAKEN)) as reader:
        return reference.render_report(reader.read(), base=base)


def _same(old: str, new: str) -> None:
    """Equal, and where not, the first place they part (not two 400 kB strings)."""
    if old != new:
        at = next(i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b)
        assert new[max(at - 200, 0) : at + 200] == old[max(at - 200, 0) : at + 200]
    assert len(new) == len(old)


def test_the_report_of_a_sqlite_batch_is_the_one_every_record_made(
    sqlite_batch: Path, tmp_path: Path
) -> None:
    old = _reference(sqlite_batch, None, tmp_path)
    new = render_report(sqlite_batch, base=tmp_path, clock=FakeClock(wall=TAKEN))
    _same(old, new)
    for figure in (
        f"<p>{TASKS + 3} tasks, {TASKS - 6 + 6} attempts.</p>",
        "retry_after",
        "spare-model",
        "anthropic-api/claude-x",
    ):
        assert figure in new


def test_the_file_written_is_the_report_and_no_spec_is_decoded(
    sqlite_batch: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    decoded: list[str] = []
    real = decode_spec

    def counting(text: str, **kwargs: Any) -> Any:
        decoded.append(text)
        return real(text, **kwargs)

    monkeypatch.setattr(_task_rows, "decode_spec", counting)
    path = write_report(sqlite_batch, tmp_path / "out.html", clock=FakeClock(wall=TAKEN))
    assert decoded == []
    assert not (tmp_path / "out.html.tmp").exists()
    monkeypatch.undo()
    _same(_reference(sqlite_batch, None, tmp_path), path.read_text(encoding="utf-8"))


def _redis_reports(
    batch_states: ModuleType, location: StoreLocation, tmp_path: Path, tasks: int
) -> tuple[str, str]:
    state = tmp_path / "runner"
    bundle = open_stores(location, state_dir=state, secrets={})
    try:
        batch_states.fill(bundle.tasks, tasks, tmp_path)
        _retried(bundle.tasks, tmp_path)
        _circuits(bundle.circuit_log)
    finally:
        bundle.close()
    old = _reference(state, location, tmp_path)
    new = render_report(state, base=tmp_path, location=location, clock=FakeClock(wall=TAKEN))
    return old, new


def test_the_report_of_a_redis_batch_is_the_one_every_record_made(
    batch_states: ModuleType, redis_location: StoreLocation, tmp_path: Path
) -> None:
    old, new = _redis_reports(batch_states, redis_location, tmp_path, TASKS)
    _same(old, new)
    assert "spare-model" in new


def test_the_report_reads_a_redis_cluster_through_its_scripts(
    batch_states: ModuleType, cluster_location: StoreLocation, tmp_path: Path
) -> None:
    old, new = _redis_reports(batch_states, cluster_location, tmp_path, 30)
    _same(old, new)
    assert f"<p>{30 + 3} tasks" in new


@pytest.mark.parametrize(
    ("path", "base"),
    [
        ("/b/runs/t/1", "/b"),
        ("/b/runs/t/1", "/b/runs"),
        ("/b/runs", "/b/runs"),
        ("/b/runs", "/b/runs/t"),
        ("/b", "/b/runs/t"),
        ("/a/x", "/b/c"),
        ("runs", "/b"),
        ("runs/", "/b"),
        ("/b/runs/..", "/b"),
        ("", "/b"),
    ],
)
def test_links_are_the_relative_paths_os_path_gives(path: str, base: str) -> None:
    links = _Links(Path(base))
    try:
        expected = os.path.relpath(path, base)
    except ValueError:
        expected = path
    assert links.relative(path) == expected
    assert links.relative(path) == expected  # and again, from its caches


def test_a_sqlite_report_reads_one_moment_while_the_batch_moves(
    batch_states: ModuleType, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    with SQLiteTaskStore(state) as writer, SQLiteTaskStore(state) as reader:
        batch_states.fill(writer, 30, tmp_path)  # t000020..22 stay pending
        pending = TaskFilter(states=frozenset({TaskState.PENDING}))
        with reader.report_snapshot():
            before = reader.state_counts()
            op = next(iter(reader.report_lines(pending, size=1)))[0].operation_id
            writer.begin_attempt(op, number=1, attempt_id=f"{op}:1", output_dir="runs", at=TAKEN)
            assert reader.state_counts() == before
            assert [len(p) for p in reader.report_lines(pending, size=2)] == [2, 1]
            assert reader.attempts_of([op]) == ()
        assert reader.state_counts()[TaskState.PENDING] == before[TaskState.PENDING] - 1
        assert len(reader.attempts_of([op])) == 1


def test_a_batch_that_made_no_attempt_yet_has_the_same_report(tmp_path: Path) -> None:
    state = tmp_path / "state"
    specs = [
        TaskSpec(
            workflow_id="w",
            task_id=f"t{i}",
            adapter="mock",
            model="m",
            workspace=tmp_path,
            timeout_s=1.0,
            prompt="p",
        )
        for i in range(5)
    ]
    with SQLiteTaskStore(state) as store:
        store.register_all(specs, at=TAKEN)
    old = _reference(state, None, tmp_path)
    new = render_report(state, base=tmp_path, clock=FakeClock(wall=TAKEN))
    _same(old, new)
    assert "<p>5 tasks, 0 attempts.</p>" in new


def _stored_lines(store: Any, where: TaskFilter) -> list[Any]:
    """The lines Python makes from each selected task's stored texts, in registration
    order (the way the Redis store made them before its scripts picked the fields)."""
    client = store._conn.client
    out = []
    for op in store._ids(where):
        spec, row = client.hmget(store._task_key(op), "spec", "row")
        flat = [part for pair in client.hgetall(store._attempt_key(op)).items() for part in pair]
        out.append(redis_report_reads._line(op, spec, row, flat))
    return out


def test_the_lines_redis_scripts_pick_are_those_python_makes_of_the_stored_texts(
    batch_states: ModuleType, redis_location: StoreLocation, tmp_path: Path
) -> None:
    bundle = open_stores(redis_location, state_dir=tmp_path / "runner", secrets={})
    try:
        store = bundle.tasks
        batch_states.fill(store, 40, tmp_path)
        _retried(store, tmp_path)
        for state in TaskState:
            where = TaskFilter(states=frozenset({state}))
            pages = list(store.report_lines(where, size=2))
            assert all(0 < len(page) <= 2 for page in pages)
            assert [line for page in pages for line in page] == _stored_lines(store, where)
        everything = [line for page in store.report_lines(TaskFilter(), size=7) for line in page]
        assert everything == _stored_lines(store, TaskFilter())
        assert len(everything) == 43
        assert {line.fallbacks for line in everything} >= {None}
        assert any(line.fallbacks and "spare-model" in line.fallbacks for line in everything)
        assert any(line.cost_usd == 0.1 / 3 + 0.07 for line in everything)
        rows = _stored_attempt_rows(store)
        # A field that is not of its kind comes back as the stored row, read in Python.
        odd = json.loads(rows[-1])
        odd[8] = "later"
        op, number = odd[0], str(odd[1])
        store._conn.client.hset(store._attempt_key(op), number, json.dumps(odd))
        rows = _stored_attempt_rows(store)
        facts = [fact for page in store.attempt_facts(size=3) for fact in page]
        assert facts == [redis_report_reads._stored_fact(json.loads(row)) for row in rows]
        assert facts[-1].delay_s == "later"
        assert any(fact.retry_after for fact in facts)
        assert any(fact.delay_s == 2.0 + 1 / 3 for fact in facts)
        times = [t for page in store.attempt_times(size=4) for t in page]
        assert times == [(f.started_at, f.ended_at, f.outcome, f.delay_s) for f in facts]
    finally:
        bundle.close()


def _stored_attempt_rows(store: Any) -> list[Any]:
    """Every attempt's stored row, in the order they were made."""
    client = store._conn.client
    entries = [e.decode().split("\x1f") for e in client.lrange(store._attempt_order, 0, -1)]
    return [client.hget(store._attempt_key(op), number) for op, number in entries]


def test_stored_values_a_compact_line_cannot_carry_are_read_from_the_stored_texts(
    batch_states: ModuleType, redis_location: StoreLocation, tmp_path: Path
) -> None:
    bundle = open_stores(redis_location, state_dir=tmp_path / "runner", secrets={})
    try:
        store = bundle.tasks
        batch_states.fill(store, 30, tmp_path)
        client = store._conn.client
        succeeded = TaskFilter(states=frozenset({TaskState.SUCCEEDED}))
        first, second = store._ids(succeeded)[:2]
        row = client.hget(store._task_key(first), "row")
        fields = json.loads(row)
        fields[5] = json.dumps({"model": 1 / 3, "requested_model": None})
        client.hset(store._task_key(first), "row", json.dumps(fields))
        third = store._ids(succeeded)[2]
        attempt = json.loads(client.hget(store._attempt_key(third), "1"))
        attempt[10] = json.dumps({"output_tokens": 2, "cost_usd": float("inf")})
        client.hset(store._attempt_key(third), "1", json.dumps(attempt))
        attempt = json.loads(client.hget(store._attempt_key(second), "1"))
        attempt[10] = json.dumps({"input_tokens": 2 / 3, "cost_usd": None})
        client.hset(store._attempt_key(second), "1", json.dumps(attempt))
        lines = [line for page in store.report_lines(succeeded, size=4) for line in page]
        assert lines == _stored_lines(store, succeeded)
        by_op = {line.operation_id: line for line in lines}
        assert by_op[first].answered_model == 1 / 3
        assert by_op[second].input_tokens == 2 / 3
        assert by_op[second].cost_usd == 0.0
        assert by_op[third].cost_usd == float("inf")
    finally:
        bundle.close()
