"""``backstay demo``, run whole as users run it: a real process, the embedded fake
provider, 30 tasks through the three API adapters. Run once for the module (it takes
about a minute, nearly all of it the scenario's waits); the tests read what it left."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Final

import pytest
from tests.adapters.support import CANARY_KEY

from backstay.cli.demo import EVENTS_FILE, KEY_VARIABLE, REPORT_FILE, REQUESTS_FILE
from backstay.demo import EXPECTED_ENDS, EXPECTED_TASKS
from backstay.store import STATE_FILE

ROOT: Final = Path(__file__).parents[2]
# The command as installed: the console script beside this Python.
BACKSTAY: Final = str(Path(sys.executable).with_name("backstay"))
# Generous: the demo takes about a minute; a loaded machine may take longer.
DEMO_TIMEOUT_S: Final = 300


class Ran:
    def __init__(self, state_dir: Path, result: subprocess.CompletedProcess[str]) -> None:
        self.state_dir = state_dir
        self.code = result.returncode
        self.stdout = result.stdout
        self.stderr = result.stderr
        self.report = json.loads((state_dir / REPORT_FILE).read_text(encoding="utf-8"))


def _backstay(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [BACKSTAY, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=DEMO_TIMEOUT_S,
        env=env,
        check=False,
    )


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Ran:
    state_dir = tmp_path_factory.mktemp("demo") / "state"
    env = {**os.environ, KEY_VARIABLE: CANARY_KEY, "COLUMNS": "200"}
    result = _backstay("demo", "--state-dir", str(state_dir), env=env)
    return Ran(state_dir, result)


def test_the_demo_exits_0_having_behaved_as_designed(ran: Ran) -> None:
    assert ran.code == 0, ran.stderr
    assert ran.report["as_designed"] is True
    assert ran.report["unexpected"] == []
    assert "as designed:" in ran.stdout


def test_the_summary_shows_the_storm_and_how_it_was_sat_out(ran: Ran) -> None:
    report = ran.report
    assert report["total"] == EXPECTED_TASKS
    assert report["by_state"]["succeeded"] == EXPECTED_TASKS - len(EXPECTED_ENDS)
    # The content policy failure is failed with its escalation open for review.
    assert (report["by_state"]["failed"], report["by_state"]["escalated"]) == (2, 0)
    assert report["by_state"]["paused"] == 1
    kinds = report["failures_by_kind"]
    for kind in ("rate_limit", "server_error", "network", "context_limit", "content_policy"):
        assert kinds.get(kind, 0) >= 1, kinds
    assert report["circuit_trips"] >= 1
    assert report["circuit_waits"] >= 1
    assert report["waited_s"] > 0
    assert report["tokens_total"] > 0
    assert report["cost_usd"] > 0
    assert report["open_escalations"] == 2
    for row in ("tasks", "failed attempts by kind", "circuit trips", "time spent waiting"):
        assert row in ran.stdout
    assert "anthropic-api/claude-haiku-4-5" in ran.stdout


def test_progress_is_plain_lines_when_not_on_a_terminal(ran: Ran) -> None:
    assert "attempt 1 started" in ran.stdout
    assert "circuit anthropic-api/claude-haiku-4-5: opened" in ran.stdout
    assert "is open: waiting" in ran.stdout


def test_the_state_directory_holds_the_state_report_logs_and_attempts(ran: Ran) -> None:
    for name in (STATE_FILE, REPORT_FILE, EVENTS_FILE, REQUESTS_FILE, "batch.json"):
        assert (ran.state_dir / name).is_file(), name
    metrics = sorted(ran.state_dir.glob("runs/*/T0/run_*/attempt_*/metrics.json"))
    assert len(metrics) == sum(1 for _ in ran.state_dir.glob("runs/*/T0/run_*/attempt_*"))
    assert len(metrics) >= EXPECTED_TASKS
    events = (ran.state_dir / EVENTS_FILE).read_text(encoding="utf-8").splitlines()
    names = {json.loads(line)["event"] for line in events}
    assert {"task.started", "task.succeeded", "circuit.opened", "task.deferred"} <= names
    assert str(ran.state_dir) in ran.stdout


def test_the_status_command_reads_the_demos_state_directory(ran: Ran) -> None:
    status = _backstay("status", "--state-dir", str(ran.state_dir), "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["total"] == EXPECTED_TASKS


def test_the_api_key_appears_nowhere(ran: Ran) -> None:
    assert CANARY_KEY not in ran.stdout
    assert CANARY_KEY not in ran.stderr
    for path in ran.state_dir.rglob("*"):
        if path.is_file():
            assert CANARY_KEY.encode() not in path.read_bytes(), path


def test_a_state_directory_in_use_is_refused_before_anything_runs(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("mine", encoding="utf-8")
    result = _backstay("demo", "--state-dir", str(tmp_path))
    assert result.returncode == 2
    assert "--state-dir" in result.stderr
    assert "not an empty directory" in result.stderr
    assert "Traceback" not in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]


def test_export_writes_the_suite_to_run_against_real_providers(tmp_path: Path) -> None:
    result = _backstay("demo", "--export", str(tmp_path / "mine"))
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in (tmp_path / "mine").iterdir()) == [
        "backstay.yaml",
        "scenario.yaml",
        "suite.yaml",
    ]
    assert "backstay batch" in result.stdout
    again = _backstay("demo", "--export", str(tmp_path / "mine"))
    assert again.returncode == 2
    assert "exists already" in again.stderr
