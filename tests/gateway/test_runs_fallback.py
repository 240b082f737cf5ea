"""A run's fallback model comes from its task's ``fallbacks``: the attempt on a candidate is
given the next candidate's model of the same provider and key
(``gateway_wiring.gateway_fallback``, set around the dispatch by the engine's driver and
the harness chain), its run ticket carries it, and a request whose own failures open the
circuit of its model moves there at once (``request.fell_back``, ``circuit_opened``), as
do the requests that follow while the circuit stays open (``circuit_open``).

End to end: ``backstay batch`` of the real Claude Code inside a private network namespace,
a task whose model is down at the provider (every request of it a 529) and whose fallback
is another model of Anthropic's: the CLI starts once, its session goes on at the fallback
model, and the batch's events.jsonl has ``request.fell_back``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import anthropic
import pytest
import yaml
from tests.adapters.cli_provider import (
    BACKSTAY,
    BASE_ENV,
    Providers,
    Served,
    installed,
    namespace_providers,
)
from tests.adapters.support import CANARY_KEY
from tests.gateway.helpers import ANTHROPIC_MODEL, FAST_POLICY, MESSAGES

from backstay.adapters.gateway_wiring import (
    current_fallback_model,
    gateway_fallback,
    open_run,
    use_fallback_model,
    use_gateway,
)
from backstay.breaker import BreakerRegistry, BreakerSettings
from backstay.events import EVENTS_FILE
from backstay.fakeprovider import FakeProvider, Fault, FaultKind, Scenario
from backstay.fallback import Candidate
from backstay.gateway import Gateway, GatewaySettings, RequestFellBack, Upstreams
from backstay.gateway.runs import LocalRunGateway, RunTokens
from backstay.testing import capture_events

FALLBACK: Final = "claude-haiku-4-5"
PRIMARY: Final = "claude-sonnet-4-5"
TURNS: Final = 3
TIMEOUT_S: Final = 240.0
FINAL: Final = "All three steps are done."


def _chain(*entries: str) -> list[Candidate]:
    out = []
    for entry in entries:
        adapter, _, rest = entry.partition(":")
        model, _, key_env = rest.partition("@")
        out.append(Candidate(adapter=adapter, model=model, api_key_env=key_env or None))
    return out


@pytest.mark.parametrize(
    ("chain", "index", "expected"),
    [
        (("claude-code:claude-sonnet-4-5", "claude-code:claude-haiku-4-5"), 0, FALLBACK),
        # Another provider's candidate is passed over for the next one of the same provider.
        (("claude-code:a", "codex:gpt-5", "anthropic-api:b"), 0, "b"),
        # The provider prefix of an any-provider CLI is dropped.
        (("opencode:anthropic/a", "opencode:anthropic/b"), 0, "b"),
        # Another key, the same model, nothing later, or no provider known: none.
        (("claude-code:a", "claude-code:b@OTHER_KEY"), 0, None),
        (("claude-code:a", "anthropic-api:a"), 0, None),
        (("claude-code:a", "claude-code:b"), 1, None),
        (("mock:a", "mock:b"), 0, None),
        (("claude-code:a",), 3, None),
    ],
)
def test_the_fallback_model_is_the_next_candidates_of_the_same_provider_and_key(
    chain: tuple[str, ...], index: int, expected: str | None
) -> None:
    assert gateway_fallback(_chain(*chain), index) == expected


def _breakers(open_duration_s: float = 600.0) -> BreakerRegistry:
    return BreakerRegistry(
        settings=BreakerSettings(
            failure_threshold=2, failure_rate_threshold=None, open_duration_s=open_duration_s
        )
    )


# FAST_POLICY waits up to 300 s for a probe within its 60 s deadline: a probe 30 s away is
# one it would wait for without a fallback model, 600 s away one it would not.
@pytest.mark.parametrize("open_duration_s", [600.0, 30.0], ids=["probe_past", "probe_within"])
def test_a_request_whose_failures_open_its_circuit_moves_to_the_fallback_model_at_once(
    open_duration_s: float,
) -> None:
    """The first request meets the down model until its circuit opens, then is answered by
    the fallback model in the same client request (not waiting for the probe, however
    near); the next goes there at once."""
    from backstay.adapters.cli.claude_code import ClaudeCodeAdapter  # noqa: PLC0415
    from backstay.adapters.contract import AgentRequest  # noqa: PLC0415

    runs = RunTokens()
    faults = (Fault(kind=FaultKind.OVERLOADED, model=ANTHROPIC_MODEL),)
    with capture_events() as events, FakeProvider(Scenario(faults=faults), log_path=None) as fake:
        settings = GatewaySettings(port=0, policy=FAST_POLICY, upstreams=Upstreams.all(fake.url))
        with Gateway(settings, runs=runs, breakers=_breakers(open_duration_s)) as gateway:
            request = AgentRequest(
                model=ANTHROPIC_MODEL,
                prompt_file=Path("prompt.txt"),
                workspace=Path(),
                output_dir=Path(),
                timeout_s=60.0,
                env={"ANTHROPIC_API_KEY": CANARY_KEY, "ANTHROPIC_BASE_URL": fake.url},
            )
            local = LocalRunGateway(gateway.url, runs, 60.0)
            with use_gateway(local), use_fallback_model(FALLBACK):
                assert current_fallback_model() == FALLBACK
                run = open_run(
                    ClaudeCodeAdapter.gateway_wiring,
                    request,
                    operation_id="op-fb",
                    attempt_id="op-fb:attempt_1",
                )
            assert run is not None
            token = run.request.env["ANTHROPIC_API_KEY"]
            assert current_fallback_model() is None
            with anthropic.Anthropic(base_url=gateway.url, api_key=token, max_retries=0) as c:
                first = c.messages.create(model=ANTHROPIC_MODEL, max_tokens=20, messages=MESSAGES)  # type: ignore[arg-type]
                second = c.messages.create(model=ANTHROPIC_MODEL, max_tokens=20, messages=MESSAGES)  # type: ignore[arg-type]
            tally = run.close()
        stats = fake.stats()
    assert (first.model, second.model) == (FALLBACK, FALLBACK)
    fell = [e for e in events if isinstance(e, RequestFellBack)]
    assert [(e.model, e.fallback_model, e.reason, e.task) for e in fell] == [
        (ANTHROPIC_MODEL, FALLBACK, "circuit_opened", "op-fb"),
        (ANTHROPIC_MODEL, FALLBACK, "circuit_open", "op-fb"),
    ]
    # Two 529s opened the circuit; the two answers came from the fallback model.
    assert dict(stats.by_status) == {529: 2, 200: 2}
    assert tally is not None
    assert (tally.requests, tally.refused) == (4, 2)


def test_a_run_without_a_fallback_model_is_told_when_the_probe_is() -> None:
    """Its failures opened the circuit, whose probe (600 s) is past what the gateway waits:
    not the stale 529 but the open circuit's 503 with the wait (``test_circuit_probe.py``),
    and no request more upstream."""
    runs = RunTokens()
    faults = (Fault(kind=FaultKind.OVERLOADED, model=ANTHROPIC_MODEL),)
    with FakeProvider(Scenario(faults=faults), log_path=None) as fake:
        settings = GatewaySettings(port=0, policy=FAST_POLICY, upstreams=Upstreams.all(fake.url))
        with Gateway(settings, runs=runs, breakers=_breakers()) as gateway:
            local = LocalRunGateway(gateway.url, runs, 60.0)
            token = local.open_run(
                provider="anthropic",
                key=CANARY_KEY,
                upstream=None,
                task="op-none",
                attempt=None,
                traceparent=None,
                model=ANTHROPIC_MODEL,
            )
            with (
                anthropic.Anthropic(base_url=gateway.url, api_key=token, max_retries=0) as c,
                pytest.raises(anthropic.APIStatusError) as refused,
            ):
                c.messages.create(model=ANTHROPIC_MODEL, max_tokens=20, messages=MESSAGES)  # type: ignore[arg-type]
        stats = fake.stats()
    assert refused.value.status_code == 503
    assert "next probe in 59" in refused.value.message
    assert refused.value.response.headers["retry-after"] == "600"
    assert dict(stats.by_status) == {529: 2}


def test_a_shared_gateway_moves_a_run_opened_over_http_to_its_fallback_model() -> None:
    """``RemoteRunGateway`` (``--gateway URL``) carries the fallback model in the ticket."""
    from backstay.gateway.run_admin import RemoteRunGateway  # noqa: PLC0415

    gateway_token = "shared-gateway-token-fallback-0123"
    faults = (Fault(kind=FaultKind.OVERLOADED, model=ANTHROPIC_MODEL),)
    with FakeProvider(Scenario(faults=faults), log_path=None) as fake:
        settings = GatewaySettings(
            port=0, policy=FAST_POLICY, upstreams=Upstreams.all(fake.url), token=gateway_token
        )
        with Gateway(settings, runs=RunTokens(), breakers=_breakers()) as gateway:
            remote = RemoteRunGateway(gateway.url, gateway_token)
            with use_gateway(remote), use_fallback_model(FALLBACK):
                token = remote.open_run(
                    provider="anthropic",
                    key=CANARY_KEY,
                    upstream=None,
                    task="op-shared",
                    attempt=None,
                    traceparent=None,
                    model=ANTHROPIC_MODEL,
                    fallback_model=current_fallback_model(),
                )
            with anthropic.Anthropic(base_url=gateway.url, api_key=token, max_retries=0) as c:
                answer = c.messages.create(model=ANTHROPIC_MODEL, max_tokens=20, messages=MESSAGES)  # type: ignore[arg-type]
            remote.close_run(token)
        stats = fake.stats()
    assert answer.model == FALLBACK
    assert dict(stats.by_status) == {529: 2, 200: 1}


# -- end to end: backstay batch, the real Claude Code ------------------------------------


@pytest.fixture(scope="module")
def providers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Providers]:
    yield from namespace_providers(tmp_path_factory)


def _write_suite(tmp_path: Path) -> Path:
    suite = {
        "suite": "fallback",
        "tasks": [
            {
                "id": "down-model",
                "adapter": "claude-code",
                "model": PRIMARY,
                "timeout_s": TIMEOUT_S,
                "prompt": "Run the three steps, one command at a time.",
                "fallbacks": [{"adapter": "claude-code", "model": FALLBACK}],
            }
        ],
    }
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    return path


# The gateway's policy: quick retries, enough attempts for the breaker (5 failures) to open.
FAST_GATEWAY_CONFIG: Final = """retry:
  policies:
    gateway:
      max_attempts: 8
      initial_delay_s: 0.01
      max_delay_s: 0.05
      deadline_s: 120
"""


def _events(state: Path) -> list[dict[str, Any]]:
    lines = (state / EVENTS_FILE).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _down_model(providers: Providers, tmp_path: Path) -> tuple[Served, Path, dict[str, str]]:
    """A provider whose ``PRIMARY`` is down (every request a 529), the configuration with
    the quick gateway policy, and the exported variables."""
    served = providers.serve(
        {
            "session": {
                "turns": [{"shell": f"echo step-{i} >> progress.txt"} for i in (1, 2, 3)],
                "final": FINAL,
            },
            "faults": [{"fault": "overloaded", "model": PRIMARY}],
        }
    )
    config = tmp_path / "backstay.yaml"
    config.write_text(FAST_GATEWAY_CONFIG, encoding="utf-8")
    env = {
        **BASE_ENV,
        "HOME": os.environ.get("HOME", "/root"),
        "ANTHROPIC_API_KEY": CANARY_KEY,
        "ANTHROPIC_BASE_URL": served.url,
    }
    return served, config, env


def _went_on_at_the_fallback(stats: dict[str, Any], workspace: Path) -> None:
    """The down model refused until its circuit opened (5 failures); every turn was then
    answered once, at the fallback model."""
    assert (workspace / "progress.txt").read_text().splitlines() == ["step-1", "step-2", "step-3"]
    assert stats["by_fault"] == {"overloaded": 5}, stats
    assert stats["by_status"] == {"529": 5, "200": TURNS + 1}, stats


def test_claude_code_goes_on_at_the_tasks_fallback_model_when_its_model_is_down(
    providers: Providers, tmp_path: Path
) -> None:
    installed("claude-code")
    served, config, env = _down_model(providers, tmp_path)
    state = tmp_path / "state"
    argv = [*BACKSTAY, "batch", str(_write_suite(tmp_path)), "--state-dir", str(state)]
    argv += ["--config", str(config)]
    done = providers.namespace.run(argv, timeout_s=TIMEOUT_S + 120, env=env, cwd=tmp_path)
    stats = served.stats()
    logs = {str(p): p.read_text() for p in (state / "runs").rglob("agent.log")}
    assert done.returncode == 0, f"{done.stderr}\n{done.stdout[-3000:]}\n{logs}"
    # One attempt: the CLI started once and went through the gateway.
    assert len(logs) == 1, sorted(logs)
    (log,) = logs.values()
    assert log.count(": attempt ") == 1, log
    assert "through the gateway at http://127.0.0.1:" in log, log
    (workspace,) = (state / "runs").glob("*/*/*/workspace")
    _went_on_at_the_fallback(stats, workspace)
    fell = [e for e in _events(state) if e.get("event") == "request.fell_back"]
    assert fell, _events(state)
    assert fell[0]["reason"] == "circuit_opened", fell
    assert {(e["model"], e["fallback_model"]) for e in fell} == {(PRIMARY, FALLBACK)}, fell
    assert CANARY_KEY not in done.stdout + done.stderr


@pytest.mark.slow
def test_backstay_run_with_a_fallback_goes_on_at_its_model_when_the_runs_model_is_down(
    providers: Providers, tmp_path: Path
) -> None:
    """The same through ``backstay run --fallback`` (the harness chain): one attempt."""
    installed("claude-code")
    served, config, env = _down_model(providers, tmp_path)
    workspace, out = tmp_path / "workspace", tmp_path / "out"
    workspace.mkdir()
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Run the three steps, one command at a time.", encoding="utf-8")
    argv = [*BACKSTAY, "run", "--adapter", "claude-code", "--model", PRIMARY]
    argv += ["--fallback", f"claude-code:{FALLBACK}", "--config", str(config)]
    argv += ["--prompt-file", str(prompt), "--workspace", str(workspace)]
    argv += ["--output-dir", str(out), "--timeout", str(TIMEOUT_S)]
    done = providers.namespace.run(argv, timeout_s=TIMEOUT_S + 120, env=env, cwd=tmp_path)
    stats = served.stats()
    log = (out / "agent.log").read_text() if (out / "agent.log").exists() else ""
    assert done.returncode == 0, f"{done.stderr}\n{log}"
    assert log.count("started pid ") == 1, log
    assert "through the gateway at http://127.0.0.1:" in log, log
    _went_on_at_the_fallback(stats, workspace)
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["candidates"] == [f"claude-code/{PRIMARY}"], metrics
    assert "request.fell_back" in done.stderr, done.stderr
