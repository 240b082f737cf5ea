"""``backstay status``: where the batch of a state directory stands, as a table or JSON."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.cli.support import (
    DONE,
    RESETS_AT,
    four_outcome_batch,
    invoke,
    status_json,
    write_suite,
)

from backstay.store import STATE_FILE


@pytest.fixture(autouse=True)
def _no_stray_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BACKSTAY_CONFIG", raising=False)


def test_status_json_counts_the_tasks_by_state_and_failure(tmp_path: Path) -> None:
    _, state = four_outcome_batch(tmp_path)
    data = status_json(state)
    assert data["total"] == 4
    # The content policy failure is failed with an escalation open for review.
    assert {k: n for k, n in data["by_state"].items() if n} == {
        "succeeded": 1,
        "failed": 2,
        "paused": 1,
    }
    assert data["failures_by_kind"] == {
        "content_policy": 1,
        "context_limit": 1,
        "quota_exhausted": 1,
    }
    assert (data["attempts"], data["tokens_input"], data["cost_usd"]) == (4, 10, 0.001)
    # The spent quota waits for its reset and for a human: it has an escalation too.
    assert data["open_escalations"] == 2
    assert data["next_resume_at"] == RESETS_AT
    quota = next(task for task in data["tasks"] if task["run"] == "quota/T0-run_01")
    assert (quota["state"], quota["next_run_at"]) == ("paused", RESETS_AT)
    assert data["batch"]["suite"] == "nightly"
    assert data["tasks"][0]["operation_id"] == f"{data['batch']['workflow_id']}:ok:T0-run_01"


def test_status_counts_the_tasks_and_lists_those_that_need_a_person(tmp_path: Path) -> None:
    _, state = four_outcome_batch(tmp_path)
    result = invoke("status", "--state-dir", state)
    assert result.exit_code == 0, result.output
    assert "4 tasks: 1 succeeded, 2 failed, 1 paused" in result.stdout
    assert "tasks that need a person" in result.stdout
    rows = [line for line in result.stdout.splitlines() if "/T0-run_01" in line]
    assert [row.split()[1] for row in rows] == [
        "overflow/T0-run_01",
        "blocked/T0-run_01",
        "quota/T0-run_01",
    ]
    assert "context_limit exceeded" in rows[0]


def test_status_all_lists_every_task(tmp_path: Path) -> None:
    _, state = four_outcome_batch(tmp_path)
    result = invoke("status", "--state-dir", state, "--all")
    assert result.exit_code == 0, result.output
    rows = [line for line in result.stdout.splitlines() if "/T0-run_01" in line]
    assert [row.split()[1] for row in rows] == [
        "ok/T0-run_01",
        "overflow/T0-run_01",
        "blocked/T0-run_01",
        "quota/T0-run_01",
    ]


def test_a_missing_state_directory_exits_2(tmp_path: Path) -> None:
    result = invoke("status", "--state-dir", tmp_path / "nowhere")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: --state-dir: ")
    assert "does not exist: no batch ran there" in result.stderr
    assert not (tmp_path / "nowhere").exists()


def test_a_damaged_state_file_exits_2_and_is_left_as_it_was(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / STATE_FILE).write_bytes(b"not a database at all" * 100)
    result = invoke("status", "--state-dir", state, "--json")
    assert result.exit_code == 2
    assert str(state / STATE_FILE) in result.stderr
    assert "Traceback" not in result.output
    assert (state / STATE_FILE).read_bytes() == b"not a database at all" * 100


def test_a_damaged_batch_file_exits_2(tmp_path: Path) -> None:
    _, state = four_outcome_batch(tmp_path)
    (state / "batch.json").write_text("{", encoding="utf-8")
    result = invoke("status", "--state-dir", state)
    assert result.exit_code == 2
    assert "batch.json: is damaged" in result.stderr


def _fallback_batch(tmp_path: Path) -> Path:
    """Two tasks whose model may fall back to ``mock-spare``: ``moved`` fails once
    (overloaded) and is answered by the fallback, ``stayed`` succeeds at once."""
    suite = write_suite(
        tmp_path,
        ["moved", "stayed"],
        scenarios={"moved": [[{"error": "overloaded"}], DONE]},
        task_fields={"fallbacks": [{"adapter": "mock", "model": "mock-spare"}]},
    )
    state = tmp_path / "state"
    result = invoke("batch", suite, "--state-dir", state)
    assert result.exit_code == 0, result.output
    return state


def test_status_json_names_the_requested_and_the_answering_model(tmp_path: Path) -> None:
    data = status_json(_fallback_batch(tmp_path))
    tasks = {task["task_id"]: task for task in data["tasks"]}
    assert (tasks["moved"]["requested"], tasks["moved"]["answered"]) == (
        "mock/mock-model",
        "mock/mock-spare",
    )
    assert tasks["moved"]["fell_back"] is True
    assert (tasks["stayed"]["answered"], tasks["stayed"]["fell_back"]) == ("mock/mock-model", False)
    assert data["fell_back"] == 1
    assert data["answers_by_model"] == {"mock/mock-model": 1, "mock/mock-spare": 1}


def test_status_shows_who_answered_a_task_that_fell_back(tmp_path: Path) -> None:
    result = invoke("status", "--state-dir", _fallback_batch(tmp_path), "--all")
    assert result.exit_code == 0, result.output
    rows = {line.split()[1]: line for line in result.stdout.splitlines() if "/T0-run_01" in line}
    assert "mock/mock-model -> mock/mock-spare" in rows["moved/T0-run_01"]
    assert "->" not in rows["stayed/T0-run_01"]
