"""``backstay escalations list | show | resolve``: the failures waiting for a human, and
the decisions that move their tasks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.cli.support import dispatches, four_outcome_batch, invoke, states_of

from backstay.cli._state import SOME_WAITING


@pytest.fixture(autouse=True)
def _no_stray_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BACKSTAY_CONFIG", raising=False)


def _listed(state: Path, *flags: str) -> list[dict[str, Any]]:
    result = invoke("escalations", "list", "--state-dir", state, "--json", *flags)
    assert result.exit_code == 0, result.output
    found: list[dict[str, Any]] = json.loads(result.stdout)
    return found


def _blocked(state: Path) -> int:
    """The id of the content-policy escalation of the task ``blocked``."""
    (found,) = [e for e in _listed(state) if e["task_id"] == "blocked"]
    return int(found["escalation_id"])


def test_list_gives_the_open_escalations_with_their_failures(tmp_path: Path) -> None:
    _, state = four_outcome_batch(tmp_path)
    found = {e["task_id"]: e for e in _listed(state)}
    assert sorted(found) == ["blocked", "quota"]
    assert found["blocked"]["failure"]["kind"] == "content_policy"
    assert found["quota"]["failure"]["kind"] == "quota_exhausted"
    assert {e["status"] for e in found.values()} == {"open"}
    table = invoke("escalations", "list", "--state-dir", state)
    assert "content_policy (ERR_LLM_CONTENT_FILTER)" in table.stdout


def test_show_gives_the_failure_and_what_the_attempt_left(tmp_path: Path) -> None:
    _, state = four_outcome_batch(tmp_path)
    number = _blocked(state)
    result = invoke("escalations", "show", str(number), "--state-dir", state, "--json")
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert shown["context"]["attempt"] == 1
    assert Path(shown["context"]["output_dir"]).name == "attempt_1"
    text = invoke("escalations", "show", str(number), "--state-dir", state).stdout
    assert "Output blocked by content filtering policy" in text


def test_retry_then_resume_finishes_the_escalated_task(tmp_path: Path) -> None:
    _, state = four_outcome_batch(tmp_path)
    number = str(_blocked(state))
    args = ["resolve", number, "--action", "retry", "--note", "reworded"]
    resolved = invoke("escalations", *args, "--state-dir", state)
    assert resolved.exit_code == 0, resolved.output
    assert "blocked/T0-run_01 is pending now; backstay resume" in resolved.stdout
    resumed = invoke("resume", "--state-dir", state)
    assert resumed.exit_code == SOME_WAITING, resumed.output  # the quota still waits
    assert states_of(state)["blocked/T0-run_01"] == "succeeded"
    assert dispatches(tmp_path) == 5
    (decided,) = [e for e in _listed(state, "--all") if e["task_id"] == "blocked"]
    assert (decided["status"], decided["action"], decided["note"]) == (
        "resolved",
        "retry",
        "reworded",
    )


@pytest.mark.parametrize(("action", "state"), [("fail", "failed"), ("skip", "cancelled")])
def test_fail_and_skip_end_the_task_without_running_it(
    tmp_path: Path, action: str, state: str
) -> None:
    _, state_dir = four_outcome_batch(tmp_path)
    number = str(_blocked(state_dir))
    result = invoke(
        "escalations", "resolve", number, "--action", action, "--state-dir", state_dir, "--json"
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["task_state"] == state
    invoke("resume", "--state-dir", state_dir)
    assert states_of(state_dir)["blocked/T0-run_01"] == state
    assert dispatches(tmp_path) == 4


def test_an_unknown_escalation_exits_2(tmp_path: Path) -> None:
    _, state = four_outcome_batch(tmp_path)
    for command in (["show", "99"], ["resolve", "99", "--action", "retry"]):
        result = invoke("escalations", *command, "--state-dir", state)
        assert result.exit_code == 2
        assert "no escalation 99" in result.stderr
        assert "Traceback" not in result.output


def test_a_bad_action_exits_2_and_records_nothing(tmp_path: Path) -> None:
    _, state = four_outcome_batch(tmp_path)
    number = str(_blocked(state))
    result = invoke("escalations", "resolve", number, "--action", "ignore", "--state-dir", state)
    assert result.exit_code == 2
    assert "--action: must be one of retry, resume, fail, skip" in result.stderr
    assert len(_listed(state)) == 2


def test_an_escalation_is_resolved_once(tmp_path: Path) -> None:
    _, state = four_outcome_batch(tmp_path)
    number = str(_blocked(state))
    invoke("escalations", "resolve", number, "--action", "skip", "--state-dir", state)
    again = invoke("escalations", "resolve", number, "--action", "retry", "--state-dir", state)
    assert again.exit_code == 2
    assert "already resolved" in again.stderr


def test_escalations_of_a_missing_state_directory_exit_2(tmp_path: Path) -> None:
    result = invoke("escalations", "list", "--state-dir", tmp_path / "nowhere")
    assert result.exit_code == 2
    assert "no batch ran there" in result.stderr
