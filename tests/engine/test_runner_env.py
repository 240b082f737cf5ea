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
from backstay.failure import Failure
from backstay.fallback import Candidate

SECRET: Final = "sk-ant-api03-EngineInheritCanary0123456789"
ENVIRON: Final = {
    "REC_API_KEY": SECRET,
    "REC_BASE_URL": "http://127.0.0.1:1",
    "UNRELATED_TOKEN": "not-for-the-agent",
}
SPARE_SECRET: Final = "sk-proj-SpareInheritCanary0123456789abcdef"


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


class DownAdapter(RecordingAdapter):
    """Keeps the environment of each attempt, and is overloaded every time."""

    async def execute(
        self, request: AgentRequest, *, operation_id: str, attempt_id: str, capture: Capture
    ) -> AgentResult:
        self.envs.append(dict(request.env))
        return AgentResult.failed(Failure(code="ERR_HTTP_529_OVERLOADED"))


class SpareAdapter(RecordingAdapter):
    """A fallback's adapter, whose provider has variables of its own."""

    name: ClassVar[str] = "spare"
    provider_env: ClassVar[ProviderEnv] = ProviderEnv(
        credentials=("SPARE_API_KEY",), endpoint=("SPARE_BASE_URL",)
    )


def _fall_back(
    state: Path, workspace: Path, environ: Mapping[str, str], **changes: object
) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """The environments the task's own adapter (down) and its fallback were given."""
    down, spare = DownAdapter(), SpareAdapter()
    fields: dict[str, object] = {"env": {"LANG": "C"}, **changes}
    task = spec(workspace, fallbacks=(Candidate(adapter="spare", model="s"),), **fields)
    adapters = {"fake": down, "spare": spare}
    with Engine(state, adapters=adapters, env=environ, breaker=None) as engine:
        summary = engine.run_sync([task])
    assert summary.count(TaskState.SUCCEEDED) == 1
    return down.envs, spare.envs


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


FALLBACK_ENVIRON: Final = {
    **ENVIRON,
    "SPARE_API_KEY": SPARE_SECRET,
    "SPARE_BASE_URL": "http://127.0.0.1:2",
}


def test_a_fallback_candidate_gets_its_own_adapters_variables_not_the_tasks(
    tmp_path: Path,
) -> None:
    down, spare = _fall_back(tmp_path / "state", tmp_path, FALLBACK_ENVIRON)
    assert down == [{"REC_API_KEY": SECRET, "REC_BASE_URL": "http://127.0.0.1:1", "LANG": "C"}]
    assert spare == [
        {"SPARE_API_KEY": SPARE_SECRET, "SPARE_BASE_URL": "http://127.0.0.1:2", "LANG": "C"}
    ]


def test_a_fallback_candidates_explicit_variables_win_over_its_inherited_ones(
    tmp_path: Path,
) -> None:
    env = {"LANG": "C", "SPARE_BASE_URL": "http://127.0.0.1:3"}
    _, spare = _fall_back(tmp_path / "state", tmp_path, FALLBACK_ENVIRON, env=env)
    assert spare == [
        {"SPARE_API_KEY": SPARE_SECRET, "SPARE_BASE_URL": "http://127.0.0.1:3", "LANG": "C"}
    ]


def test_a_task_that_does_not_inherit_gives_no_candidate_its_variables(tmp_path: Path) -> None:
    down, spare = _fall_back(tmp_path / "state", tmp_path, FALLBACK_ENVIRON, inherit_env=False)
    assert (down, spare) == ([{"LANG": "C"}], [{"LANG": "C"}])


def test_a_fallback_candidates_inherited_values_are_never_written_to_the_state_directory(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    _fall_back(state, tmp_path, FALLBACK_ENVIRON)
    files = [path for path in state.rglob("*") if path.is_file()]
    assert files
    for path in files:
        data = path.read_bytes()
        assert SPARE_SECRET.encode() not in data, path
        assert SECRET.encode() not in data, path
        assert b"127.0.0.1:2" not in data, path
