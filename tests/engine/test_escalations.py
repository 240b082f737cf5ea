"""EscalationQueue: a human's decision moves the task, in the same transaction."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.engine.support import OK, WALL, ScriptedAdapter, engine, spec

from backstay.engine import Engine, EscalationStatus, ResolveAction, TaskState
from backstay.errors import ConfigError
from backstay.failure import Failure
from backstay.testing import capture_events

OP = "wf:t1:run_01"
S = TaskState
# An auth failure waits in escalated for a human (a content policy failure fails with its
# escalation open for review: test_a_content_policy_escalation_*).
FILTERED = Failure(code="ERR_AUTH_INVALID_KEY")
SERVER = Failure(code="ERR_HTTP_500_INTERNAL")


@pytest.fixture
def adapter() -> ScriptedAdapter:
    return ScriptedAdapter({"t1": [FILTERED, OK]})


@pytest.fixture
def eng(tmp_path: Path, adapter: ScriptedAdapter) -> Iterator[Engine]:
    with engine(tmp_path, adapter) as opened:
        opened.run_sync([spec(tmp_path)])
        yield opened


def _state(eng: Engine) -> TaskState:
    record = eng.store.task(OP)
    assert record is not None
    return record.state


@pytest.mark.parametrize(
    ("action", "state"),
    [
        (ResolveAction.RETRY, S.PENDING),
        (ResolveAction.RESUME, S.PENDING),
        (ResolveAction.FAIL, S.FAILED),
        (ResolveAction.SKIP, S.CANCELLED),
    ],
)
def test_each_action_moves_the_task(eng: Engine, action: ResolveAction, state: TaskState) -> None:
    eng.escalations.resolve(1, action, "looked at it")
    assert _state(eng) is state


def test_a_resolved_escalation_records_the_decision(eng: Engine) -> None:
    resolved = eng.escalations.resolve(1, "skip", "not worth it", by="ana")
    assert (resolved.status, resolved.action, resolved.note, resolved.resolved_by) == (
        EscalationStatus.RESOLVED,
        ResolveAction.SKIP,
        "not worth it",
        "ana",
    )
    assert resolved.resolved_at == WALL


def test_a_retried_task_runs_on_the_next_resume(eng: Engine, adapter: ScriptedAdapter) -> None:
    eng.escalations.resolve(1, ResolveAction.RETRY)
    summary = eng.resume_sync()
    assert (summary.count(S.SUCCEEDED), len(adapter.calls)) == (1, 2)
    assert [c.attempt_id for c in adapter.calls] == [f"{OP}:attempt_1", f"{OP}:attempt_2"]


def test_a_failed_or_skipped_task_is_never_dispatched_again(
    eng: Engine, adapter: ScriptedAdapter
) -> None:
    eng.escalations.resolve(1, ResolveAction.FAIL)
    eng.resume_sync()
    assert len(adapter.calls) == 1


def test_a_humans_retry_starts_a_new_retry_budget(tmp_path: Path) -> None:
    adapter = ScriptedAdapter({"t1": [FILTERED, SERVER, SERVER, SERVER, OK]})
    with engine(tmp_path, adapter) as eng:
        eng.run_sync([spec(tmp_path)])
        eng.escalations.resolve(1, ResolveAction.RETRY)
        summary = eng.resume_sync()
    assert (summary.count(S.SUCCEEDED), summary.attempts) == (1, 5)


def test_a_paused_task_resumed_by_a_human_runs_before_its_reset(tmp_path: Path) -> None:
    resets = WALL + dt.timedelta(days=1)
    adapter = ScriptedAdapter({"t1": [Failure(code="ERR_LLM_DAILY_QUOTA", resets_at=resets), OK]})
    with engine(tmp_path, adapter) as eng:
        eng.run_sync([spec(tmp_path)])
        eng.escalations.resolve(1, ResolveAction.RESUME, "moved to another key")
        summary = eng.resume_sync()
    assert summary.count(S.SUCCEEDED) == 1


def test_an_escalation_is_resolved_only_once(eng: Engine) -> None:
    eng.escalations.resolve(1, ResolveAction.FAIL)
    with pytest.raises(ConfigError, match="already resolved"):
        eng.escalations.resolve(1, ResolveAction.RETRY)


def test_an_unknown_action_is_refused_and_nothing_changes(eng: Engine) -> None:
    with pytest.raises(ConfigError, match="retry, resume, fail, skip"):
        eng.escalations.resolve(1, "ignore")
    assert _state(eng) is S.ESCALATED


def test_an_unknown_escalation_is_refused(eng: Engine) -> None:
    with pytest.raises(ConfigError, match="no escalation 7"):
        eng.escalations.get(7)


def test_the_queue_lists_open_escalations_unless_asked_for_all(eng: Engine) -> None:
    eng.escalations.resolve(1, ResolveAction.SKIP)
    assert (len(eng.escalations.list()), len(eng.escalations.list(include_resolved=True))) == (0, 1)


def test_resolving_emits_escalation_resolved(eng: Engine) -> None:
    with capture_events() as events:
        eng.escalations.resolve(1, ResolveAction.RETRY, "go")
    (event,) = events.named("escalation.resolved")
    assert event.to_dict()["action"] == "retry"
    assert event.to_dict()["state"] == "pending"


@pytest.mark.parametrize(
    ("action", "state"), [(ResolveAction.RETRY, S.PENDING), (ResolveAction.FAIL, S.FAILED)]
)
def test_a_content_policy_escalation_reopens_or_leaves_its_failed_task(
    tmp_path: Path, action: ResolveAction, state: TaskState
) -> None:
    adapter = ScriptedAdapter({"t1": [Failure(code="ERR_LLM_CONTENT_FILTER"), OK]})
    with engine(tmp_path, adapter) as eng:
        eng.run_sync([spec(tmp_path)])
        assert _state(eng) is S.FAILED
        eng.escalations.resolve(1, action, "reviewed")
        assert _state(eng) is state
        assert eng.escalations.list() == ()
