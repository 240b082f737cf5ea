"""Fallback chains in the engine, through the official SDKs, against the fake provider:
an outage moves work to the fallback and back when the circuit closes; a context
overflow moves to the larger window only; an invalid request and a stream broken after
its first token never move."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from tests.adapters.support import CANARY_KEY

from backstay.adapters.api.anthropic import AnthropicApiAdapter
from backstay.adapters.api.openai import OpenAIApiAdapter
from backstay.breaker import BreakerSettings
from backstay.engine import AttemptRecord, Engine, TaskRecord, TaskSpec, TaskState
from backstay.fakeprovider import FakeProvider, Fault, FaultKind, Scenario
from backstay.fallback import Candidate
from backstay.policy.retry import RetryPolicy
from backstay.testing import capture_events

PRIMARY: Final = "claude-haiku-4-5"
SPARE: Final = "gpt-5-mini"
FAST: Final = RetryPolicy(
    name="fast", max_attempts=4, initial_delay_s=0.05, max_delay_s=0.05, jitter=0.0
)
BREAKER: Final = BreakerSettings(
    failure_threshold=2, failure_rate_threshold=None, open_duration_s=0.3
)
ENV: Final = {"ANTHROPIC_API_KEY": CANARY_KEY, "OPENAI_API_KEY": CANARY_KEY}


def _spare(url: str, model: str = SPARE, window: int | None = None) -> Candidate:
    return Candidate(
        adapter="openai-api",
        model=model,
        api_key_env="OPENAI_API_KEY",
        base_url=url + "/v1",
        context_window=window,
    )


def _spec(
    tmp_path: Path,
    task_id: str,
    url: str,
    fallbacks: Sequence[Candidate],
    *,
    base_url: str | None = None,
    window: int | None = None,
) -> TaskSpec:
    workspace = tmp_path / "ws" / task_id
    workspace.mkdir(parents=True)
    return TaskSpec(
        workflow_id="fallback",
        task_id=task_id,
        adapter="anthropic-api",
        model=PRIMARY,
        workspace=workspace,
        timeout_s=20.0,
        prompt="Say hello",
        env=ENV,
        config={"base_url": base_url or url, "stream": True},
        policy=FAST,
        fallbacks=tuple(fallbacks),
        context_window=window,
    )


@dataclasses.dataclass(frozen=True, slots=True)
class _Ran:
    tasks: dict[str, TaskRecord]
    attempts: dict[str, list[AttemptRecord]]
    by_api: dict[str, int]


def _engine(state: Path) -> Engine:
    adapters = {"anthropic-api": AnthropicApiAdapter(), "openai-api": OpenAIApiAdapter()}
    return Engine(state, adapters=adapters, env=ENV, breaker=BREAKER, concurrency=1)


def _collect(engine: Engine) -> tuple[dict[str, TaskRecord], dict[str, list[AttemptRecord]]]:
    tasks = {t.task_id: t for t in engine.store.tasks()}
    attempts = {
        t.task_id: list(engine.store.attempts(t.operation_id)) for t in engine.store.tasks()
    }
    return tasks, attempts


def _candidates(attempts: list[AttemptRecord]) -> list[str | None]:
    return [a.candidate for a in attempts]


def _metrics(attempt: AttemptRecord) -> dict[str, object]:
    data: dict[str, object] = json.loads((Path(attempt.output_dir) / "metrics.json").read_text())
    return data


def _run_one(tmp_path: Path, scenario: Scenario, make: object) -> _Ran:
    with FakeProvider(scenario) as fake:
        spec = make(fake.url)  # type: ignore[operator]
        with _engine(tmp_path / "state") as engine:
            engine.run_sync([spec])
            tasks, attempts = _collect(engine)
        by_api = dict(fake.stats().by_api)
    return _Ran(tasks, attempts, by_api)


def test_an_outage_moves_work_to_the_fallback_and_back_when_the_circuit_closes(
    tmp_path: Path,
) -> None:
    # The primary model's first two requests fail: they open its circuit (threshold 2).
    down = Fault(kind=FaultKind.SERVER_ERROR, model=PRIMARY, first=2)
    primary = f"anthropic-api/{PRIMARY}"
    spare = f"openai-api/{SPARE}@OPENAI_API_KEY"
    with FakeProvider(Scenario(faults=(down,))) as fake, capture_events() as events:
        with _engine(tmp_path / "state") as engine:
            engine.run_sync(
                [_spec(tmp_path, f"t{i}", fake.url, [_spare(fake.url)]) for i in (1, 2, 3)]
            )
            time.sleep(BREAKER.open_duration_s + 0.1)  # the circuit may let a probe through
            engine.run_sync([_spec(tmp_path, "t4", fake.url, [_spare(fake.url)])])
            tasks, attempts = _collect(engine)
        by_api = dict(fake.stats().by_api)
    assert {t.state for t in tasks.values()} == {TaskState.SUCCEEDED}
    assert _candidates(attempts["t1"]) == [primary, spare]
    assert _candidates(attempts["t2"]) == [primary, spare]
    assert _candidates(attempts["t3"]) == [spare]  # the open circuit is not tried
    assert _candidates(attempts["t4"]) == [primary]  # back once the circuit closed
    assert by_api == {"anthropic": 3, "openai-chat": 3}
    answered = _metrics(attempts["t1"][-1])
    assert (answered["requested_model"], answered["model"]) == (PRIMARY, SPARE)
    assert (answered["requested_adapter"], answered["adapter"]) == ("anthropic-api", "openai-api")
    assert tasks["t1"].result is not None
    assert tasks["t1"].result["model"] == SPARE
    moves = [e.to_dict() for e in events.named("task.fell_back")]
    assert [(m["task_id"], m["from_candidate"], m["to_candidate"], m["kind"]) for m in moves] == [
        ("t1", primary, spare, "server_error"),
        ("t2", primary, spare, "server_error"),
    ]


def test_a_context_overflow_moves_to_the_larger_window_only(tmp_path: Path) -> None:
    overflow = Fault(kind=FaultKind.CONTEXT_OVERFLOW, model=PRIMARY)

    def make(url: str) -> TaskSpec:
        small = _spare(url, "gpt-4o-mini", 128_000)
        large = _spare(url, "gpt-4.1", 1_000_000)
        return _spec(tmp_path, "big", url, [small, large], window=200_000)

    ran = _run_one(tmp_path, Scenario(faults=(overflow,)), make)
    attempts = ran.attempts["big"]
    assert ran.tasks["big"].state is TaskState.SUCCEEDED
    assert _candidates(attempts) == [
        f"anthropic-api/{PRIMARY}",
        "openai-api/gpt-4.1@OPENAI_API_KEY",
    ]
    assert ran.by_api == {"anthropic": 1, "openai-chat": 1}


def test_an_invalid_request_never_moves(tmp_path: Path) -> None:
    def make(url: str) -> TaskSpec:  # a path the provider does not serve: HTTP 404
        return _spec(tmp_path, "bad", url, [_spare(url)], base_url=url + "/no-such-api")

    ran = _run_one(tmp_path, Scenario(), make)
    attempts = ran.attempts["bad"]
    assert ran.tasks["bad"].state is TaskState.FAILED
    assert attempts[0].failure is not None
    assert attempts[0].failure.kind == "invalid_request"
    assert _candidates(attempts) == [f"anthropic-api/{PRIMARY}"]
    assert ran.by_api.get("openai-chat", 0) == 0


def test_a_stream_broken_after_its_first_token_does_not_move(tmp_path: Path) -> None:
    broken = Fault(kind=FaultKind.STREAM_ERROR, model=PRIMARY, first=1, after_events=5)

    def make(url: str) -> TaskSpec:
        return _spec(tmp_path, "cut", url, [_spare(url)])

    ran = _run_one(tmp_path, Scenario(faults=(broken,)), make)
    attempts = ran.attempts["cut"]
    assert ran.tasks["cut"].state is TaskState.SUCCEEDED
    assert attempts[0].failure is not None
    assert attempts[0].failure.details.get("stream_interrupted") is True
    assert _candidates(attempts) == [f"anthropic-api/{PRIMARY}"] * 2
    assert ran.by_api.get("openai-chat", 0) == 0
