"""``TaskFallback`` with an agent CLI (the mock agent, a real subprocess): a failure after
the agent changed its workspace does not move to another candidate; one that left the
workspace as it was does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.engine.support import clock, engine, spec

from backstay.adapters.mock import MockAdapter
from backstay.engine import TaskState
from backstay.engine.fallback import candidate_config
from backstay.errors import ConfigError
from backstay.fallback import Candidate

DONE: list[dict[str, Any]] = [{"result": "done", "input_tokens": 10, "output_tokens": 5}]
SPARE = Candidate(adapter="mock", model="mock-spare")


def _run(tmp_path: Path, first: list[dict[str, Any]]) -> list[str | None]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "main.py").write_text("print('hello')\n")
    config = {"scenario": {"attempts": [first, DONE]}, "state_dir": str(tmp_path / "mock")}
    task = spec(workspace, adapter="mock", model="mock-main", config=config, fallbacks=(SPARE,))
    with engine(tmp_path / "state", MockAdapter(), fake=clock()) as eng:
        eng.run_sync([task])
        (record,) = eng.store.tasks()
        assert record.state is TaskState.SUCCEEDED
        return [a.candidate for a in eng.store.attempts(record.operation_id)]


def test_an_agent_failing_before_touching_the_workspace_moves_to_the_fallback(
    tmp_path: Path,
) -> None:
    candidates = _run(tmp_path, [{"print": "thinking"}, {"error": "overloaded"}])
    assert candidates == ["mock/mock-main", "mock/mock-spare"]


def test_an_agent_failing_after_editing_the_workspace_stays_on_its_candidate(
    tmp_path: Path,
) -> None:
    edit = {"write_file": "main.py", "text": "print('half done')\n"}
    candidates = _run(tmp_path, [edit, {"error": "overloaded"}])
    assert candidates == ["mock/mock-main", "mock/mock-main"]


def test_an_agent_failing_after_adding_a_file_stays_on_its_candidate(tmp_path: Path) -> None:
    added = {"write_file": "notes/plan.md", "text": "step 1"}
    candidates = _run(tmp_path, [added, {"error": "overloaded"}])
    assert candidates == ["mock/mock-main", "mock/mock-main"]


def test_a_fallback_on_another_adapter_gets_the_tasks_limits_as_its_own(tmp_path: Path) -> None:
    task = spec(tmp_path, adapter="claude-code", config={"max_turns": 5}, limits={"max_turns": 5})
    other = Candidate(adapter="gemini-cli", model="spare")
    same = Candidate(adapter="claude-code", model="other")
    assert candidate_config(task, other) == {"max_turns": 5}
    assert candidate_config(task, same) == {"max_turns": 5}


def test_a_fallback_adapter_that_cannot_enforce_a_limit_is_refused(tmp_path: Path) -> None:
    task = spec(tmp_path, adapter="claude-code", limits={"max_turns": 5})
    with pytest.raises(ConfigError, match="cannot enforce max_turns"):
        candidate_config(task, Candidate(adapter="codex", model="spare"))
