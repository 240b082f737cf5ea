"""``backstay escalations resolve ID --approve | --reject | --edit JSON``: an agent run's
pending approval decided from its task's escalation, through the real engine, SQLite
state (and a real redis-server) and the fake provider; the next resume continues the run
with the decision, also after a crash between the approval's write and the escalation's."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.cli.support import invoke
from tests.runtime.agent_tasks import reference_agent_task

from backstay.adapters.registry import get_adapter
from backstay.cli._state import ALL_SUCCEEDED, SOME_WAITING
from backstay.engine import Engine, TaskSpec, TaskState
from backstay.engine.escalations import EscalationQueue
from backstay.fakeprovider import FakeProvider, Reply, Scenario, ToolCall
from backstay.policy.retry import RetryPolicy
from backstay.runtime import ApprovalStatus
from backstay.runtime.engine_adapter import RuntimeTaskAdapter
from backstay.store.location import STORE_ENV_VAR, StoreLocation
from backstay.store.sqlite.runs import SQLiteRunStore
from backstay.testing.fakeclock import FakeClock

KEY = "sk-ant-api03-CLIcanary0123456789abcdefABCDEFghijkl"
WRITE = ToolCall(name="write_file", arguments={"path": "notes.txt", "content": "hello"})


@pytest.fixture(autouse=True)
def _no_stray_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BACKSTAY_CONFIG", raising=False)
    monkeypatch.delenv(STORE_ENV_VAR, raising=False)


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider(Scenario(reply=Reply(tool_call=WRITE, text="Written."))) as server:
        yield server


def _spec(workspace: Path, url: str) -> TaskSpec:
    return reference_agent_task(
        workspace,
        url,
        key=KEY,
        tenant="acme",
        allowed_tools=["write_file"],
        approval_tools=["write_file"],
    )


def _engine(state: Path) -> Engine:
    return Engine(
        state,
        adapters={"agent-runtime": RuntimeTaskAdapter()},
        clock=FakeClock(),
        env={"ANTHROPIC_API_KEY": KEY},
    )


def _escalated(tmp_path: Path, fake: FakeProvider) -> tuple[Path, TaskSpec, int]:
    """A batch whose agent task waits for the approval of its ``write_file`` call."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    spec = _spec(workspace, fake.url)
    state = tmp_path / "state"
    with _engine(state) as engine:
        engine.run_sync([spec])
        (escalation,) = engine.escalations.list()
    return state, spec, escalation.escalation_id


def _resume(state: Path, spec: TaskSpec) -> TaskState:
    with _engine(state) as engine:
        engine.resume_sync()
        task = engine.store.task(spec.operation_id)
    assert task is not None
    return task.state


def _resolve(state: Path, number: int, *flags: str) -> Any:
    return invoke("escalations", "resolve", str(number), "--state-dir", state, *flags)


def test_approve_decides_the_approval_and_the_resume_runs_the_call(
    tmp_path: Path, fake: FakeProvider
) -> None:
    state, spec, number = _escalated(tmp_path, fake)
    done = _resolve(state, number, "--approve", "--reason", "looks right", "--json")
    assert done.exit_code == 0, done.output
    shown = json.loads(done.stdout)
    assert shown["approval"]["status"] == "approved"
    assert shown["task_state"] == "pending"
    assert shown["escalation"]["action"] == "retry"
    (decided,) = SQLiteRunStore(state / "state.sqlite").approvals("acme", open_only=False)
    assert (decided.status, decided.note) == (ApprovalStatus.APPROVED, "looks right")
    assert _resume(state, spec) is TaskState.SUCCEEDED
    assert (tmp_path / "ws" / "notes.txt").read_text() == "hello"


def test_edit_runs_the_call_with_the_changed_arguments(tmp_path: Path, fake: FakeProvider) -> None:
    state, spec, number = _escalated(tmp_path, fake)
    edited = json.dumps({"path": "notes.txt", "content": "edited"})
    done = _resolve(state, number, "--edit", edited)
    assert done.exit_code == 0, done.output
    assert "write_file edited, retry" in done.stdout
    assert _resume(state, spec) is TaskState.SUCCEEDED
    assert (tmp_path / "ws" / "notes.txt").read_text() == "edited"


def test_reject_does_not_run_the_call_and_the_agent_goes_on(
    tmp_path: Path, fake: FakeProvider
) -> None:
    state, spec, number = _escalated(tmp_path, fake)
    assert _resolve(state, number, "--reject", "--reason", "no").exit_code == 0
    assert _resume(state, spec) is TaskState.SUCCEEDED
    assert not (tmp_path / "ws" / "notes.txt").exists()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--edit", "{not json"), "--edit: is not JSON"),
        (("--edit", "[1, 2]"), "--edit: must be a JSON object"),
        (("--approve", "--reject"), "not --approve and --reject"),
        (("--approve", "--action", "retry"), "give --action, or one of"),
    ],
)
def test_a_bad_decision_is_a_usage_error_and_records_nothing(
    tmp_path: Path, fake: FakeProvider, flags: tuple[str, ...], message: str
) -> None:
    state, _, number = _escalated(tmp_path, fake)
    done = _resolve(state, number, *flags)
    assert done.exit_code == 2
    assert message in " ".join(done.output.split())
    assert "Traceback" not in done.output
    (pending,) = SQLiteRunStore(state / "state.sqlite").approvals("acme")
    assert pending.status is ApprovalStatus.PENDING


def test_an_unknown_or_already_decided_escalation_is_a_usage_error(
    tmp_path: Path, fake: FakeProvider
) -> None:
    state, _, number = _escalated(tmp_path, fake)
    unknown = _resolve(state, number + 99, "--approve")
    assert unknown.exit_code == 2
    assert f"no escalation {number + 99}" in unknown.output
    assert _resolve(state, number, "--approve").exit_code == 0
    again = _resolve(state, number, "--reject")
    assert again.exit_code == 2
    assert "already resolved" in again.output
    assert "Traceback" not in again.output


def test_a_langgraph_interrupt_in_a_suite_task_is_answered_from_the_command_line(
    tmp_path: Path, fake: FakeProvider
) -> None:
    """``adapter: langgraph`` whose graph calls ``interrupt()``: the task escalates,
    ``--edit`` answers the interrupt, the next resume finishes the graph with it."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    spec = TaskSpec(
        workflow_id="wf",
        task_id="review",
        adapter="langgraph",
        model="gpt-5",
        workspace=workspace,
        timeout_s=60,
        prompt="Draft a title.",
        env={"OPENAI_API_KEY": "test-key"},
        config={
            "agent": "tests.frameworks.langgraph.test_run:review_graph",
            "options": {"base_url": fake.url + "/v1"},
        },
        policy=RetryPolicy(name="once", max_attempts=1),
    )
    state = tmp_path / "state"

    def engine() -> Engine:
        adapters = {"langgraph": get_adapter("langgraph")}
        return Engine(state, adapters=adapters, clock=FakeClock(), env={"OPENAI_API_KEY": "k"})

    with engine() as first:
        first.run_sync([spec])
        (escalation,) = first.escalations.list()
    done = _resolve(state, escalation.escalation_id, "--edit", '{"title": "Final"}')
    assert done.exit_code == 0, done.output
    assert "interrupt edited, retry" in done.stdout
    with engine() as second:
        second.resume_sync()
        task = second.store.task(spec.operation_id)
    assert task is not None
    assert task.state is TaskState.SUCCEEDED
    run = SQLiteRunStore(state / "state.sqlite").load_run("default", spec.operation_id)
    assert run is not None
    assert run.results[-1].output["answer"] == "published as Final"


def test_show_gives_the_pending_approval_with_its_arguments(
    tmp_path: Path, fake: FakeProvider
) -> None:
    state, _, number = _escalated(tmp_path, fake)
    shown = invoke("escalations", "show", str(number), "--state-dir", state, "--json")
    assert shown.exit_code == 0, shown.output
    approval = json.loads(shown.stdout)["approval"]
    assert (approval["tool"], approval["status"]) == ("write_file", "pending")
    assert approval["arguments"] == {"path": "notes.txt", "content": "hello"}
    table = invoke("escalations", "show", str(number), "--state-dir", state).stdout
    assert "write_file (pending)" in table


def _crash_between_the_two_writes(
    monkeypatch: pytest.MonkeyPatch, state: Path, number: int
) -> None:
    """``resolve --approve`` stopped after the approval's write, before the escalation's."""

    def killed(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    with monkeypatch.context() as patched:
        patched.setattr(EscalationQueue, "resolve", killed)
        stopped = _resolve(state, number, "--approve")
    assert stopped.exit_code != 0
    (decided,) = SQLiteRunStore(state / "state.sqlite").approvals("acme", open_only=False)
    assert decided.status is ApprovalStatus.APPROVED
    with _engine(state) as engine:
        (still,) = engine.escalations.list()
    assert still.action is None


def test_approving_again_after_a_crash_between_the_two_writes_finishes_the_job(
    tmp_path: Path, fake: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    state, spec, number = _escalated(tmp_path, fake)
    _crash_between_the_two_writes(monkeypatch, state, number)
    again = _resolve(state, number, "--approve", "--json")
    assert again.exit_code == 0, again.output
    shown = json.loads(again.stdout)
    assert (shown["approval"]["status"], shown["task_state"]) == ("approved", "pending")
    assert shown["escalation"]["action"] == "retry"
    assert _resume(state, spec) is TaskState.SUCCEEDED
    assert (tmp_path / "ws" / "notes.txt").read_text() == "hello"


def test_a_different_decision_after_such_a_crash_is_refused_naming_action_retry(
    tmp_path: Path, fake: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    state, spec, number = _escalated(tmp_path, fake)
    _crash_between_the_two_writes(monkeypatch, state, number)
    refused = _resolve(state, number, "--reject")
    assert refused.exit_code == 2
    said = " ".join(refused.output.split())
    assert "already approved" in said
    assert f"backstay escalations resolve {number} --action retry" in said
    assert "nothing was recorded" in said
    assert "Traceback" not in refused.output
    assert _resolve(state, number, "--action", "retry").exit_code == 0
    assert _resume(state, spec) is TaskState.SUCCEEDED
    assert (tmp_path / "ws" / "notes.txt").read_text() == "hello"


REDIS_SUITE = """\
suite: ra
defaults: {{adapter: agent-runtime, model: claude-sonnet-4-6, timeout_s: 60, tenant: acme}}
adapters:
  agent-runtime:
    agent: "backstay.runtime.reference:make_agent"
    options: {{base_url: "{url}"}}
    api_key_env: ANTHROPIC_API_KEY
    allowed_tools: [write_file]
    approval_tools: [write_file]
tasks: [{{id: w, prompt: "Write notes"}}]
"""


def test_approve_on_a_redis_store_finds_the_approval_in_redis(
    tmp_path: Path,
    fake: FakeProvider,
    redis_location: StoreLocation,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The batch's run store is its Redis: a foreign ``state.sqlite`` two levels above
    the state directory is left byte for byte, ``--approve`` from another directory
    decides the approval recorded in Redis, and ``resume`` runs the approved call."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    foreign = tmp_path / "state.sqlite"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE my_app (k)")
    conn.close()
    before = foreign.read_bytes()
    suite = tmp_path / "suite.yaml"
    suite.write_text(REDIS_SUITE.format(url=fake.url), encoding="utf-8")
    state, url = tmp_path / "x" / "state", str(redis_location.url)
    ran = invoke("batch", suite, "--state-dir", state, "--store", url)
    assert ran.exit_code == SOME_WAITING, ran.output
    listed = invoke("escalations", "list", "--state-dir", "elsewhere", "--store", url, "--json")
    (escalation,) = json.loads(listed.stdout)
    number = str(escalation["escalation_id"])
    shown = invoke("escalations", "show", number, "--state-dir", "elsewhere", "--store", url)
    assert "write_file (pending)" in shown.stdout, shown.output
    done = invoke(
        "escalations", "resolve", number, "--approve", "--state-dir", "elsewhere", "--store", url
    )
    assert done.exit_code == 0, done.output
    assert "write_file approved, retry" in done.stdout
    resumed = invoke("resume", "--state-dir", state, "--store", url)
    assert resumed.exit_code == ALL_SUCCEEDED, resumed.output
    workspace = state / "runs" / "w" / "T0" / "run_01" / "workspace"
    assert (workspace / "notes.txt").read_text(encoding="utf-8") == "hello"
    assert foreign.read_bytes() == before
    assert sorted(p for p in tmp_path.rglob("*.sqlite*") if p.is_file()) == [foreign]
