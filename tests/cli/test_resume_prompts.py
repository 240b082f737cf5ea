"""``escalations resolve --action retry`` then ``resume`` of a task whose prompt holds
personal data: the state keeps the prompt redacted, the resume reads it again from the
suite file (real mock-agent subprocesses, real SQLite state); a suite file whose prompt
changed meanwhile is refused with exit 2, naming the task, and nothing runs."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from tests.cli.support import DONE, dispatches, invoke, states_of, write_suite

from backstay.cli._state import ALL_SUCCEEDED, SOME_FAILED

EMAIL = "jane.canary@example.com"
PROMPT = f"Write to {EMAIL} about the refund."


@pytest.fixture(autouse=True)
def _no_stray_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BACKSTAY_CONFIG", raising=False)


def _escalated(tmp_path: Path) -> tuple[Path, Path]:
    """A batch whose one task was blocked by content policy (failed, escalated for
    review), and its retry decided."""
    suite = write_suite(
        tmp_path,
        ["mail"],
        scenarios={"mail": [[{"error": "content_filter"}], DONE]},
        task_fields={"prompt": PROMPT},
    )
    state = tmp_path / "state"
    result = invoke("batch", suite, "--state-dir", state)
    # A content policy failure fails the task, its escalation open for review.
    assert result.exit_code == SOME_FAILED, result.output
    listed = invoke("escalations", "list", "--state-dir", state, "--json")
    (escalation,) = json.loads(listed.stdout)
    number = str(escalation["escalation_id"])
    resolved = invoke("escalations", "resolve", number, "--action", "retry", "--state-dir", state)
    assert resolved.exit_code == 0, resolved.output
    with sqlite3.connect(state / "state.sqlite") as conn:
        (spec,) = conn.execute("SELECT spec_json FROM backstay_tasks").fetchone()
    assert EMAIL not in spec
    return suite, state


def test_a_retried_task_resumes_with_its_prompt_read_again(tmp_path: Path) -> None:
    _, state = _escalated(tmp_path)
    resumed = invoke("resume", "--state-dir", state)
    assert resumed.exit_code == ALL_SUCCEEDED, resumed.output
    assert states_of(state) == {"mail/T0-run_01": "succeeded"}
    assert dispatches(tmp_path) == 2


def test_a_changed_prompt_is_refused_by_resume_naming_the_task(tmp_path: Path) -> None:
    suite, state = _escalated(tmp_path)
    suite.write_text(suite.read_text(encoding="utf-8").replace("refund", "invoice"))
    resumed = invoke("resume", "--state-dir", state)
    assert resumed.exit_code == 2, resumed.output
    assert "task 'mail'" in resumed.output
    assert "changed since the task was recorded" in resumed.output
    assert "Traceback" not in resumed.output
    assert EMAIL not in resumed.output
    assert dispatches(tmp_path) == 1
    again = invoke("batch", suite, "--state-dir", state)
    assert again.exit_code == ALL_SUCCEEDED, again.output
    assert dispatches(tmp_path) == 2
