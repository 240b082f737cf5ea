"""Where a CLI task's attempt starts in the engine: ``AttemptStarts`` on real folders
(snapshot, restore, the session plan, the previous attempt read from its records), with
no CLI run (``start_path`` itself: tests/adapters/cli/test_attempt_start.py)."""

from __future__ import annotations

import dataclasses
import datetime as _dt
from pathlib import Path
from typing import Any

from backstay.adapters.api.anthropic import AnthropicApiAdapter
from backstay.adapters.cli.aider import AiderAdapter
from backstay.adapters.cli.claude_code import ClaudeCodeAdapter
from backstay.adapters.contract import AgentRequest
from backstay.adapters.session import SessionRecord, write_session_record
from backstay.engine.attempt_start import SESSION_HOME_DIR, SNAPSHOT_DIR, AttemptStarts, StartPath
from backstay.engine.records import AttemptOutcome, AttemptRecord
from backstay.engine.task import TaskSpec
from backstay.failure import Failure
from backstay.testing.events import capture_events

NOW = _dt.datetime(2026, 1, 1, tzinfo=_dt.UTC)
SESSION = SessionRecord(agent="claude-code", session_id="s-1", turns=2)


# -- AttemptStarts on real folders ---------------------------------------------------


def _spec(tmp_path: Path, **config: Any) -> TaskSpec:
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    (workspace / "notes.txt").write_text("start\n")
    return TaskSpec(
        workflow_id="w",
        task_id="t",
        adapter="claude-code",
        model="claude-sonnet-4-5",
        workspace=workspace,
        timeout_s=60.0,
        prompt="go",
        config=config,
    )


def _attempt(spec: TaskSpec, state: Path, number: int, failure: Failure | None) -> AttemptRecord:
    return AttemptRecord(
        operation_id=spec.operation_id,
        number=number,
        attempt_id=f"a{number}",
        output_dir=str(spec.attempt_dir(state, number)),
        started_at=NOW,
        outcome=AttemptOutcome.FAILED if failure else AttemptOutcome.INTERRUPTED,
        failure=failure,
    )


def _prepare(
    starts: AttemptStarts, spec: TaskSpec, state: Path, number: int, *earlier: AttemptRecord
) -> tuple[AgentRequest, StartPath | None]:
    request = spec.request(spec.attempt_dir(state, number))
    return starts.prepare(ClaudeCodeAdapter(), request, number=number, attempts=earlier)


def _transcript(starts: AttemptStarts, session_id: str) -> None:
    folder = starts.keeper.home / "home" / ".claude" / "projects" / "-workspace"
    folder.mkdir(parents=True)
    (folder / f"{session_id}.jsonl").write_text("{}\n")


def test_the_first_attempt_snapshots_the_workspace_and_gets_the_kept_home(
    tmp_path: Path,
) -> None:
    spec, state = _spec(tmp_path), tmp_path / "state"
    starts = AttemptStarts(spec, state_dir=state, policy="p")
    with capture_events() as events:
        request, path = _prepare(starts, spec, state, 1)
    assert path is StartPath.FRESH
    assert request.session is not None
    assert request.session.home == spec.run_dir(state) / SESSION_HOME_DIR
    assert request.session.resume_id is None
    assert (spec.run_dir(state) / SNAPSHOT_DIR / "manifest.json").is_file()
    [taken] = [e.to_dict() for e in events.named("workspace.snapshot_taken")]
    assert (taken["attempt"], taken["entries"], taken["size_bytes"]) == (1, 1, 6)


def test_a_later_attempt_continues_a_kept_session(tmp_path: Path) -> None:
    spec, state = _spec(tmp_path), tmp_path / "state"
    starts = AttemptStarts(spec, state_dir=state, policy="p")
    _prepare(starts, spec, state, 1)
    first = _attempt(spec, state, 1, Failure(code="ERR_HTTP_500_INTERNAL"))
    write_session_record(Path(first.output_dir), SESSION)
    _transcript(starts, "s-1")
    (spec.workspace / "notes.txt").write_text("start\nstep-1\n")
    with capture_events() as events:
        request, path = _prepare(starts, spec, state, 2, first)
    assert path is StartPath.RESUMED_SESSION
    assert request.session is not None
    assert request.session.resume_id == "s-1"
    assert request.session.prompt == "continue"
    # The workspace is left as the session left it.
    assert (spec.workspace / "notes.txt").read_text() == "start\nstep-1\n"
    [event] = [e.to_dict() for e in events.named("attempt.resumed_session")]
    assert (event["attempt"], event["session_id"], event["agent"]) == (2, "s-1", "claude-code")


def test_a_resume_after_a_budget_pause_continues_the_kept_session(tmp_path: Path) -> None:
    # The gateway refused a request at the budget (ERR_LIMIT_BUDGET) after one answer; the
    # task was paused, and a later `backstay resume` builds its own AttemptStarts.
    spec, state = _spec(tmp_path), tmp_path / "state"
    _prepare(AttemptStarts(spec, state_dir=state, policy="p"), spec, state, 1)
    stopped = _attempt(spec, state, 1, Failure(code="ERR_LIMIT_BUDGET", message="budget"))
    write_session_record(
        Path(stopped.output_dir), SessionRecord(agent="claude-code", session_id="s-1", turns=1)
    )
    resumed = AttemptStarts(spec, state_dir=state, policy="p")
    _transcript(resumed, "s-1")
    (spec.workspace / "notes.txt").write_text("start\nstep-1\n")
    request, path = _prepare(resumed, spec, state, 2, stopped)
    assert path is StartPath.RESUMED_SESSION
    assert request.session is not None
    assert request.session.resume_id == "s-1"
    assert request.session.home == spec.run_dir(state) / SESSION_HOME_DIR
    assert (spec.workspace / "notes.txt").read_text() == "start\nstep-1\n"


def test_a_session_missing_from_the_home_restores_the_workspace(tmp_path: Path) -> None:
    spec, state = _spec(tmp_path), tmp_path / "state"
    starts = AttemptStarts(spec, state_dir=state, policy="p")
    _prepare(starts, spec, state, 1)
    first = _attempt(spec, state, 1, Failure(code="ERR_HTTP_500_INTERNAL"))
    write_session_record(Path(first.output_dir), SESSION)
    (spec.workspace / "notes.txt").write_text("start\nstep-1\n")
    (spec.workspace / "added.txt").write_text("x")
    with capture_events() as events:
        request, path = _prepare(starts, spec, state, 2, first)
    assert path is StartPath.WORKSPACE_RESTORED
    assert request.session is not None
    assert request.session.resume_id is None
    assert sorted(p.name for p in spec.workspace.iterdir()) == ["notes.txt"]
    assert (spec.workspace / "notes.txt").read_text() == "start\n"
    assert [e.to_dict()["attempt"] for e in events.named("attempt.workspace_restored")] == [2]


def test_with_snapshots_off_a_later_attempt_starts_in_the_workspace_as_left(
    tmp_path: Path,
) -> None:
    spec, state = _spec(tmp_path, workspace_snapshot=False), tmp_path / "state"
    starts = AttemptStarts(spec, state_dir=state, policy="p")
    _prepare(starts, spec, state, 1)
    assert not (spec.run_dir(state) / SNAPSHOT_DIR).exists()
    (spec.workspace / "notes.txt").write_text("edited")
    first = _attempt(spec, state, 1, Failure(code="ERR_LLM_CONTENT_FILTER"))
    _, path = _prepare(starts, spec, state, 2, first)
    assert path is StartPath.WORKSPACE_AS_LEFT
    assert (spec.workspace / "notes.txt").read_text() == "edited"


def test_a_workspace_over_the_limit_is_not_snapshotted_and_says_so(tmp_path: Path) -> None:
    spec, state = _spec(tmp_path, snapshot_max_bytes=3), tmp_path / "state"
    starts = AttemptStarts(spec, state_dir=state, policy="p")
    with capture_events() as events:
        _, path = _prepare(starts, spec, state, 1)
    assert path is StartPath.FRESH
    [skipped] = [e.to_dict() for e in events.named("workspace.snapshot_skipped")]
    assert "snapshot limit (3 bytes" in skipped["reason"]
    assert "workspace_snapshot: false" in skipped["reason"]
    first = _attempt(spec, state, 1, Failure(code="ERR_HTTP_500_INTERNAL"))
    assert _prepare(starts, spec, state, 2, first)[1] is StartPath.WORKSPACE_AS_LEFT


def test_an_api_adapters_request_is_left_alone(tmp_path: Path) -> None:
    spec, state = _spec(tmp_path), tmp_path / "state"
    starts = AttemptStarts(spec, state_dir=state, policy="p")
    request = spec.request(spec.attempt_dir(state, 1))
    assert starts.prepare(AnthropicApiAdapter(), request, number=1, attempts=()) == (request, None)
    assert not spec.run_dir(state).exists()


def test_a_finished_task_leaves_neither_snapshot_nor_home(tmp_path: Path) -> None:
    spec, state = _spec(tmp_path), tmp_path / "state"
    starts = AttemptStarts(spec, state_dir=state, policy="p")
    _prepare(starts, spec, state, 1)
    _transcript(starts, "s-1")
    starts.finished()
    assert not (spec.run_dir(state) / SNAPSHOT_DIR).exists()
    assert not (spec.run_dir(state) / SESSION_HOME_DIR).exists()


def test_a_cli_that_cannot_resume_keeps_a_fresh_home_and_gets_its_workspace_restored(
    tmp_path: Path,
) -> None:
    spec, state = _spec(tmp_path), tmp_path / "state"
    starts = AttemptStarts(spec, state_dir=state, policy="p")
    aider = AiderAdapter()
    request = spec.request(spec.attempt_dir(state, 1))
    first_request, path = starts.prepare(aider, request, number=1, attempts=())
    assert (path, first_request.session) == (StartPath.FRESH, None)
    (spec.workspace / "notes.txt").write_text("start\nstep-1\n")
    first = _attempt(spec, state, 1, Failure(code="ERR_HTTP_500_INTERNAL"))
    request = spec.request(spec.attempt_dir(state, 2))
    second_request, path = starts.prepare(aider, request, number=2, attempts=(first,))
    assert (path, second_request.session) == (StartPath.WORKSPACE_RESTORED, None)
    assert (spec.workspace / "notes.txt").read_text() == "start\n"


def test_with_resume_off_the_cli_keeps_a_fresh_home(tmp_path: Path) -> None:
    spec, state = _spec(tmp_path, resume_session=False), tmp_path / "state"
    starts = AttemptStarts(spec, state_dir=state, policy="p")
    request, path = _prepare(starts, spec, state, 1)
    assert (path, request.session) == (StartPath.FRESH, None)


def test_a_suite_runs_workspace_inside_the_state_folder_is_restored(tmp_path: Path) -> None:
    state = tmp_path / "state"
    spec = _spec(tmp_path)
    inside = spec.run_dir(state) / "workspace"  # where SuiteBatch puts each run's copy
    inside.mkdir(parents=True)
    (inside / "notes.txt").write_text("start\n")
    spec = dataclasses.replace(spec, workspace=inside)
    starts = AttemptStarts(spec, state_dir=state, policy="p")
    _prepare(starts, spec, state, 1)
    (inside / "notes.txt").write_text("start\nstep-1\n")
    (inside / "added.txt").write_text("x")
    first = _attempt(spec, state, 1, Failure(code="ERR_LLM_CONTENT_FILTER"))
    _, path = _prepare(starts, spec, state, 2, first)
    assert path is StartPath.WORKSPACE_RESTORED
    assert sorted(p.name for p in inside.iterdir()) == ["notes.txt"]
    assert (inside / "notes.txt").read_text() == "start\n"
