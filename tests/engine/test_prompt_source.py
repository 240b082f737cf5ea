"""A prompt holding personal data is kept in the state only redacted, with its digest; a
resume reads it again from the suite file batch.json names (real SQLite state, real suite
files), and refuses the task, naming it, when that file is gone or gives another prompt."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
import yaml

from backstay.adapters.capture import Capture
from backstay.adapters.contract import AgentRequest, AgentResult
from backstay.config import load_suite
from backstay.engine import Engine, SuiteBatch, TaskState
from backstay.engine._spec_codec import decode_spec, encode_spec, prompt_digest
from backstay.errors import ConfigError
from backstay.testing import ScriptedAdapter
from backstay.testing.fakeclock import FakeClock

CANARY = "jane.canary@example.com"
CARD = "4111 1111 1111 1111"
PROMPT = f"Write to {CANARY} about card {CARD}."


class _Recording(ScriptedAdapter):
    """A scripted adapter that keeps the prompt each attempt was given."""

    name = "mock"

    def __init__(self) -> None:
        super().__init__(["ok"])
        self.prompts: list[str | None] = []

    async def dispatch(
        self, request: AgentRequest, *, operation_id: str, attempt_id: str, capture: Capture
    ) -> AgentResult:
        self.prompts.append(request.prompt)
        return await super().dispatch(
            request, operation_id=operation_id, attempt_id=attempt_id, capture=capture
        )


def _suite_file(tmp_path: Path, prompt: str = PROMPT, **top: Any) -> Path:
    suite = {
        "suite": "private",
        "defaults": {"adapter": "mock", "model": "mock-model", "timeout_s": 20},
        "adapters": {"mock": {"scenario": {"attempts": [[{"result": "done"}]]}}},
        "tasks": [{"id": "mail", "prompt": prompt}, {"id": "plain", "prompt": "say hello"}],
        **top,
    }
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    return path


def _registered(tmp_path: Path, suite_file: Path) -> Path:
    """The suite's tasks registered in a new state directory, not run yet."""
    state = tmp_path / "state"
    batch = SuiteBatch.open(load_suite(suite_file), state, environ={})
    batch.prepare()
    with Engine(state, adapters={"mock": _Recording()}, clock=FakeClock()) as engine:
        engine.store.register_all(batch.specs, at=engine.clock.now())
    return state


def _stored_specs(state: Path) -> list[str]:
    with sqlite3.connect(state / "state.sqlite") as conn:
        return [row[0] for row in conn.execute("SELECT spec_json FROM backstay_tasks")]


def _resume(state: Path) -> tuple[_Recording, dict[str, TaskState]]:
    adapter = _Recording()
    with Engine(state, adapters={"mock": adapter}, clock=FakeClock()) as engine:
        engine.resume_sync()
        states = {t.spec.task_id: t.state for t in engine.store.tasks()}
    return adapter, states


def test_a_prompt_with_personal_data_is_stored_redacted_with_its_digest(tmp_path: Path) -> None:
    state = _registered(tmp_path, _suite_file(tmp_path))
    mail, plain = _stored_specs(state)
    assert CANARY not in mail
    assert "4111" not in mail
    assert "[EMAIL]" in mail
    assert "[CARD]" in mail
    assert prompt_digest(PROMPT) in mail
    assert '"prompt": "say hello"' in plain
    assert "prompt_sha256" not in plain


def test_a_resume_runs_the_clear_prompt_read_again_from_the_suite_file(tmp_path: Path) -> None:
    state = _registered(tmp_path, _suite_file(tmp_path))
    adapter, states = _resume(state)
    assert sorted(p or "" for p in adapter.prompts) == sorted([PROMPT, "say hello"])
    assert states == {"mail": TaskState.SUCCEEDED, "plain": TaskState.SUCCEEDED}
    assert all(CANARY not in spec for spec in _stored_specs(state))


def test_a_changed_prompt_refuses_the_task_naming_it_and_runs_nothing(tmp_path: Path) -> None:
    suite_file = _suite_file(tmp_path)
    state = _registered(tmp_path, suite_file)
    _suite_file(tmp_path, prompt=PROMPT.replace("Write", "Call"))
    adapter = _Recording()
    engine = Engine(state, adapters={"mock": adapter}, clock=FakeClock())
    with engine, pytest.raises(ConfigError) as caught:
        engine.resume_sync()
    message = str(caught.value)
    assert "task 'mail'" in message
    assert "changed since the task was recorded" in message
    assert f"backstay batch {suite_file.resolve()}" in message
    assert CANARY not in message
    assert adapter.prompts == []


def test_a_suite_file_that_is_gone_refuses_the_task_and_says_how_to_go_on(tmp_path: Path) -> None:
    suite_file = _suite_file(tmp_path)
    state = _registered(tmp_path, suite_file)
    suite_file.unlink()
    with pytest.raises(ConfigError, match=r"task 'mail'.*cannot be read.*storage: \{prompts"):
        _resume(state)


def test_a_task_removed_from_the_suite_file_is_refused(tmp_path: Path) -> None:
    state = _registered(tmp_path, _suite_file(tmp_path))
    path = tmp_path / "suite.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["tasks"] = [t for t in data["tasks"] if t["id"] != "mail"]
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    with pytest.raises(ConfigError, match="has no task 'mail' any more"):
        _resume(state)


def test_storage_prompts_clear_keeps_the_prompt_and_needs_no_suite_file(tmp_path: Path) -> None:
    suite_file = _suite_file(tmp_path, storage={"prompts": "clear"})
    state = _registered(tmp_path, suite_file)
    assert any(CANARY in spec for spec in _stored_specs(state))
    suite_file.unlink()
    adapter, states = _resume(state)
    assert PROMPT in adapter.prompts
    assert set(states.values()) == {TaskState.SUCCEEDED}


def test_a_spec_read_back_keeps_its_redacted_prompt_and_digest_when_stored_again(
    tmp_path: Path,
) -> None:
    batch = SuiteBatch.open(load_suite(_suite_file(tmp_path)), tmp_path / "s", environ={})
    text = encode_spec(batch.specs[0])
    spec, _ = decode_spec(text, secrets={})
    assert spec.prompt_sha256 == prompt_digest(PROMPT)
    assert CANARY not in (spec.prompt or "")
    assert encode_spec(spec) == text


def test_a_wrong_storage_setting_is_refused_with_its_place(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"storage.*prompts"):
        load_suite(_suite_file(tmp_path, storage={"prompts": "plain"}))
