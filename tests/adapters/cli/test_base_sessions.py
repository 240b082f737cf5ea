"""A harness run (``BaseAdapter.run``) of a CLI adapter keeps its workspace snapshot and
its CLI session across attempts: driven through ``CliAdapter`` with a real process, a tiny
Python "agent" that does step 1 and dies on its first run, does step 2 when continued, and
does step 1 again when started afresh."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Final

from backstay.adapters.capture import Capture
from backstay.adapters.cli.attempt_start import SESSION_HOME_DIR, SNAPSHOT_DIR
from backstay.adapters.cli.base import CliAdapter, Listeners, home_run_env
from backstay.adapters.cli.process import ProcessOutcome
from backstay.adapters.contract import AgentRequest
from backstay.adapters.session import SessionPlan, read_session_record
from backstay.adapters.usage import Usage
from backstay.agents import CLIS, Located, Source
from backstay.failure import Failure
from backstay.policy.retry import RetryPolicy
from backstay.testing.events import capture_events

POLICY: Final = RetryPolicy(name="twice", max_attempts=2, initial_delay_s=0.01, jitter=0.0)
# The agent: a new session does step 1 (and dies the first time it ever runs); a continued
# one does step 2. Its sessions are files in its home.
AGENT: Final = """
import os, pathlib, sys
home = pathlib.Path(os.environ["HOME"]) / "sessions"
home.mkdir(parents=True, exist_ok=True)
if sys.argv[1] == "resume":
    if not (home / sys.argv[2]).exists():
        print("no such session"); sys.exit(1)
    print("session s-1"); print("answer")
    with open("notes.txt", "a") as f: f.write("step-2\\n")
    sys.exit(0)
if not os.environ.get("FORGET"):
    (home / "s-1").write_text(sys.stdin.read())
print("session s-1"); print("answer")
with open("notes.txt", "a") as f: f.write("step-1\\n")
marker = pathlib.Path(os.environ["DIED_ONCE"])
if not marker.exists():
    marker.write_text("")
    sys.exit(1)
"""


class _Run:
    def __init__(self) -> None:
        self.session: str | None = None
        self.answers = 0

    def line(self, text: str) -> None:
        if text.startswith("session "):
            self.session = text.split()[1]
        elif text.strip() == "answer":
            self.answers += 1


class TinyAgent(CliAdapter[Any, _Run]):
    name: ClassVar[str] = "tiny"
    agent: ClassVar[str | None] = "tiny"
    resumes_sessions: ClassVar[bool] = True
    config_keys: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, script: Path) -> None:
        self.script = script

    def parse(self, config: Mapping[str, Any]) -> Any:
        return type("S", (), {"binary": None})()

    def locate(self, settings: Any) -> Located:
        spec = CLIS["claude-code"]
        return Located(spec=spec, path=Path(sys.executable), version="1", source=Source.PATH)

    def command(self, request: AgentRequest, settings: Any, binary: Path) -> list[str]:
        return [str(binary), str(self.script), "new"]

    def resume_command(
        self, request: AgentRequest, settings: Any, binary: Path, session_id: str
    ) -> list[str]:
        return [str(binary), str(self.script), "resume", session_id]

    def session_id(self, run: _Run) -> str | None:
        return run.session

    def session_turns(self, run: _Run) -> int:
        return run.answers

    def has_session(self, home: Path, session_id: str) -> bool:
        return (home / "sessions" / session_id).exists()

    async def start(
        self, request: AgentRequest, settings: Any, cli: Located, capture: Capture
    ) -> _Run:
        return _Run()

    async def prepare_home(
        self,
        request: AgentRequest,
        settings: Any,
        cli: Located,
        run: _Run,
        *,
        folder: Path,
        capture: Capture,
    ) -> dict[str, str]:
        return home_run_env(request.env, folder, owned=(), owned_prefixes=())

    def listeners(self, run: _Run) -> Listeners:
        return Listeners(stdout=run.line)

    async def usage(
        self, request: AgentRequest, settings: Any, run: _Run, capture: Capture
    ) -> Usage:
        return Usage()

    def failure(self, outcome: ProcessOutcome, request: AgentRequest, run: _Run) -> Failure | None:
        if outcome.exit_code == 0:
            return None
        return Failure(code="ERR_HTTP_529_OVERLOADED", message="the provider was overloaded")

    def output(self, run: _Run, outcome: ProcessOutcome, *, failed: bool) -> str:
        return "done"


class ForgetfulAgent(TinyAgent):
    """Believes its session is kept, but never saved it: the CLI refuses the resume."""

    def has_session(self, home: Path, session_id: str) -> bool:
        return True

    def resume_refused(self, outcome: ProcessOutcome, run: _Run) -> bool:
        return run.session is None and "no such session" in outcome.stdout_tail


def _run(
    tmp_path: Path, agent: type[TinyAgent] = TinyAgent, **config: Any
) -> tuple[int, Path, Path]:
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    workspace, out = tmp_path / "workspace", tmp_path / "out"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("start\n")
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("do the steps")
    result = agent(script).run(
        "m",
        prompt,
        workspace,
        out,
        config,
        30.0,
        env={
            "PATH": "/usr/bin:/bin",
            "DIED_ONCE": str(tmp_path / "died"),
            **({"FORGET": "1"} if agent is ForgetfulAgent else {}),
        },
        policy=POLICY,
    )
    assert result == 0, (out / "agent.log").read_text()
    return result, workspace, out


def test_a_harness_run_continues_the_session_its_first_attempt_left(tmp_path: Path) -> None:
    _, workspace, out = _run(tmp_path)
    assert (workspace / "notes.txt").read_text() == "start\nstep-1\nstep-2\n"
    log = (out / "agent.log").read_text()
    assert "attempt 1 starts: fresh" in log
    assert "attempt 2 starts: resumed_session" in log
    record = read_session_record(out)
    assert record is not None
    assert record.resumed
    # Succeeded: nothing kept.
    assert not (out / SNAPSHOT_DIR).exists()
    assert not (out / SESSION_HOME_DIR).exists()


def test_a_harness_run_without_resume_reruns_in_the_restored_workspace(tmp_path: Path) -> None:
    _, workspace, out = _run(tmp_path, resume_session=False)
    assert (workspace / "notes.txt").read_text() == "start\nstep-1\n"
    log = (out / "agent.log").read_text()
    assert "attempt 2 starts: workspace_restored" in log
    metrics = json.loads((out / "attempt_2" / "metrics.json").read_text())
    assert metrics["exit_code"] == 0


def test_a_single_attempt_run_keeps_nothing(tmp_path: Path) -> None:
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    (tmp_path / "died").write_text("")  # it succeeds at once
    workspace, out = tmp_path / "workspace", tmp_path / "out"
    workspace.mkdir()
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("do the steps")
    result = TinyAgent(script).run(
        "m",
        prompt,
        workspace,
        out,
        {},
        30.0,
        env={"PATH": "/usr/bin:/bin", "DIED_ONCE": str(tmp_path / "died")},
        policy="none",
    )
    assert result == 0
    assert "starts:" not in (out / "agent.log").read_text()
    assert read_session_record(out) is None


def test_a_resume_the_cli_refuses_restores_the_workspace_in_the_same_attempt(
    tmp_path: Path,
) -> None:
    with capture_events() as events:
        _, workspace, out = _run(tmp_path, ForgetfulAgent)
    # The refused resume wrote nothing; the fresh start in the restored workspace did step 1.
    assert (workspace / "notes.txt").read_text() == "start\nstep-1\n"
    log = (out / "agent.log").read_text()
    assert "attempt 2 starts: resumed_session" in log
    assert "session s-1 could not be continued; the workspace was restored" in log
    assert [e.to_dict()["attempt"] for e in events.named("attempt.workspace_restored")] == [2]
    record = read_session_record(out)
    assert record is not None
    assert (record.resumed, record.resume_refused) == (False, False)
    assert not (tmp_path / "out" / "attempt_3").exists()  # no attempt spent on it


WATCHER: Final = """
import os, pathlib, sys, time
(pathlib.Path(os.environ["HOME"]) / "sessions").mkdir(parents=True, exist_ok=True)
print("session s-9", flush=True)
print("answer", flush=True)
record = pathlib.Path(os.environ["OUT"]) / "session.json"
for _ in range(200):  # 10 s at most
    if record.exists() and '"turns": 1' in record.read_text():
        sys.exit(0)
    time.sleep(0.05)
sys.exit(3)
"""


def test_session_json_is_written_while_the_cli_runs(tmp_path: Path) -> None:
    # The agent succeeds only once it sees its own session.json, so a runner that dies
    # mid-attempt leaves the session's id behind for the next one.
    script = tmp_path / "watcher.py"
    script.write_text(WATCHER)
    workspace, out = tmp_path / "workspace", tmp_path / "out"
    workspace.mkdir()
    request = AgentRequest(
        model="m",
        workspace=workspace,
        output_dir=out,
        timeout_s=30.0,
        prompt="watch",
        env={"PATH": "/usr/bin:/bin", "OUT": str(out)},
        session=SessionPlan(home=tmp_path / "home"),
    )

    async def go() -> int | None:
        with Capture(out) as capture:
            result = await TinyAgent(script).dispatch(
                request, operation_id="o", attempt_id="o/1", capture=capture
            )
        return result.exit_code

    assert asyncio.run(go()) == 0
    record = read_session_record(out)
    assert record is not None
    assert (record.session_id, record.turns) == ("s-9", 1)
