"""The engine gives each attempt the provider variables its adapter declares, read from the
engine's environment when the attempt starts: never recorded in the state directory, and
read again by a resuming engine."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar, Final

from tests.engine.support import spec

from backstay.adapters import AgentRequest, AgentResult, AgentStatus, BaseAdapter, ProviderEnv
from backstay.adapters.capture import Capture
from backstay.engine import Engine, TaskState

SECRET: Final = "sk-ant-api03-EngineInheritCanary0123456789"
ENVIRON: Final = {
    "REC_API_KEY": SECRET,
    "REC_BASE_URL": "http://127.0.0.1:1",
    "UNRELATED_TOKEN": "not-for-the-agent",
}


class RecordingAdapter(BaseAdapter):
    """Succeeds at once, keeping the environment each attempt was given."""

    name: ClassVar[str] = "fake"
    provider_env: ClassVar[ProviderEnv] = ProviderEnv(
        credentials=("REC_API_KEY",), endpoint=("REC_BASE_URL",)
    )

    def __init__(self) -> None:
        self.envs: list[dict[str, str]] = []

    async def execute(
        self, request: AgentRequest, *, operation_id: str, attempt_id: str, capture: Capture
    ) -> AgentResult:
        self.envs.append(dict(request.env))
        return AgentResult(status=AgentStatus.SUCCEEDED, output="done")


def _run(
    state: Path, workspace: Path, environ: Mapping[str, str], **changes: object
) -> list[dict[str, str]]:
    adapter = RecordingAdapter()
    with Engine(state, adapters={"fake": adapter}, env=environ, breaker=None) as engine:
        summary = engine.run_sync([spec(workspace, env={"LANG": "C"}, **changes)])
    assert summary.count(TaskState.SUCCEEDED) == 1
    return adapter.envs


def test_an_attempt_gets_the_declared_variables_and_the_explicit_ones(tmp_path: Path) -> None:
    envs = _run(tmp_path / "state", tmp_path, ENVIRON)
    assert envs == [{"REC_API_KEY": SECRET, "REC_BASE_URL": "http://127.0.0.1:1", "LANG": "C"}]


def test_a_task_that_does_not_inherit_gets_only_its_explicit_variables(tmp_path: Path) -> None:
    assert _run(tmp_path / "state", tmp_path, ENVIRON, inherit_env=False) == [{"LANG": "C"}]


def test_an_inherited_value_is_never_written_to_the_state_directory(tmp_path: Path) -> None:
    state = tmp_path / "state"
    _run(state, tmp_path, ENVIRON)
    files = [path for path in state.rglob("*") if path.is_file()]
    assert files
    for path in files:
        assert SECRET.encode() not in path.read_bytes(), path
        assert b"127.0.0.1:1" not in path.read_bytes(), path


def test_a_resumed_task_reads_the_variables_from_the_resuming_environment(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    with Engine(state, adapters={"fake": RecordingAdapter()}, env=ENVIRON) as engine:
        engine.store.register_all([spec(tmp_path)], at=_dt.datetime.now(_dt.UTC))
    later = {"REC_API_KEY": "sk-ant-api03-AnotherCanaryKey0123456789"}
    adapter = RecordingAdapter()
    with Engine(state, adapters={"fake": adapter}, env=later, breaker=None) as engine:
        summary = engine.resume_sync()
    assert summary.count(TaskState.SUCCEEDED) == 1
    assert adapter.envs == [later]
