"""The provider of a run whose CLI picks its wiring by the model's name (Aider's bare names
and aliases: ``sonnet``, ``gpt-4o``), as the adapter's own wiring knows it
(``gateway_wiring.wired_provider``): the run gets its gateway fallback model
(``gateway_fallback``) and its attempt sent straight to the provider the provider's
limiter (``engine.pacing``). Through a real gateway in front of the fake provider, an
Aider run on ``sonnet`` whose model is down moves to the fallback model its chain gives."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import anthropic
import pytest
from tests.adapters.support import CANARY_KEY
from tests.gateway.helpers import ANTHROPIC_MODEL, FAST_POLICY, MESSAGES

from backstay.adapters.cli.aider import AiderAdapter
from backstay.adapters.cli.aider.providers import GATEWAY_WIRING
from backstay.adapters.cli.claude_code import ClaudeCodeAdapter
from backstay.adapters.cli.opencode import OpencodeAdapter
from backstay.adapters.contract import AgentRequest
from backstay.adapters.gateway_wiring import (
    gateway_fallback,
    open_run,
    use_fallback_model,
    use_gateway,
    wired_provider,
)
from backstay.breaker import BreakerRegistry, BreakerSettings
from backstay.engine import Engine, TaskSpec
from backstay.fakeprovider import FakeProvider, Fault, FaultKind, Scenario
from backstay.fallback import Candidate
from backstay.gateway import Gateway, GatewaySettings, RequestFellBack, Upstreams
from backstay.gateway.runs import LocalRunGateway, RunTokens
from backstay.policy.ratelimit import RateLimitSettings
from backstay.testing import capture_events

FALLBACK: Final = "claude-haiku-4-5"
ROOMY: Final = RateLimitSettings(requests_per_minute=6000.0, burst_s=1.0)


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("sonnet", ("anthropic", "")),
        ("haiku", ("anthropic", "")),
        ("claude-3-5-haiku-20241022", ("anthropic", "claude-3-5-haiku-20241022")),
        ("anthropic/claude-sonnet-4-5", ("anthropic", "claude-sonnet-4-5")),
        ("4o", ("openai", "")),
        ("gpt-4o", ("openai", "gpt-4o")),
        ("openai/gpt-5", ("openai", "gpt-5")),
        ("o3-mini", ("openai", "o3-mini")),
        ("flash", ("gemini", "")),
        ("gemini/gemini-2.5-flash", ("gemini", "gemini-2.5-flash")),
        # Straight to a provider the gateway does not stand in for: none.
        ("deepseek/deepseek-chat", None),
        ("openrouter/anthropic/claude-sonnet-4-5", None),
        ("gemini-2.5-flash", None),  # a bare gemini-… name is Vertex AI's
    ],
)
def test_aiders_wiring_names_the_provider_of_its_model(
    model: str, expected: tuple[str, str] | None
) -> None:
    assert wired_provider(GATEWAY_WIRING, model) == expected


def test_a_cli_of_one_provider_leaves_it_to_its_name() -> None:
    assert wired_provider(ClaudeCodeAdapter.gateway_wiring, "sonnet") is None
    assert wired_provider(OpencodeAdapter.gateway_wiring, "anthropic/claude-x") is None
    assert wired_provider(None, "sonnet") is None


def _chain(*entries: str) -> list[Candidate]:
    out = []
    for entry in entries:
        adapter, _, model = entry.partition(":")
        out.append(Candidate(adapter=adapter, model=model))
    return out


@pytest.mark.parametrize(
    ("chain", "expected"),
    [
        # An alias or a bare name: its provider from Aider's wiring.
        (("aider:sonnet", f"aider:anthropic/{FALLBACK}"), FALLBACK),
        (("aider:sonnet", f"aider:{FALLBACK}"), FALLBACK),
        (("aider:claude-sonnet-4-5", f"claude-code:{FALLBACK}"), FALLBACK),
        (("aider:4o", "aider:gpt-4o-mini"), "gpt-4o-mini"),
        # Another provider's candidate is passed over, and so is a later alias (the
        # provider would not know the name ``haiku``).
        (("aider:sonnet", "aider:gpt-4o", "aider:haiku", f"aider:{FALLBACK}"), FALLBACK),
        (("aider:sonnet", "aider:haiku"), None),
        # A model the gateway does not stand in for has no provider here.
        (("aider:deepseek/deepseek-chat", "aider:deepseek/deepseek-coder"), None),
    ],
)
def test_an_aider_alias_run_gets_its_fallback_model(
    chain: tuple[str, ...], expected: str | None
) -> None:
    assert gateway_fallback(_chain(*chain), 0) == expected


def test_an_aider_alias_run_moves_to_its_fallback_model_at_the_gateway(tmp_path: Path) -> None:
    """The run of ``aider:sonnet`` (fallback ``aider:anthropic/claude-haiku-4-5``) through a
    real gateway, its requests carrying the model Aider sends for the alias, which is down:
    its failures open the circuit and it is answered by the fallback model."""
    runs = RunTokens()
    faults = (Fault(kind=FaultKind.OVERLOADED, model=ANTHROPIC_MODEL),)
    breakers = BreakerRegistry(
        settings=BreakerSettings(
            failure_threshold=2, failure_rate_threshold=None, open_duration_s=600.0
        )
    )
    chain = _chain("aider:sonnet", f"aider:anthropic/{FALLBACK}")
    with capture_events() as events, FakeProvider(Scenario(faults=faults), log_path=None) as fake:
        settings = GatewaySettings(port=0, policy=FAST_POLICY, upstreams=Upstreams.all(fake.url))
        with Gateway(settings, runs=runs, breakers=breakers) as gateway:
            request = AgentRequest(
                model="sonnet",
                prompt="hi",
                workspace=tmp_path,
                output_dir=tmp_path / "out",
                timeout_s=60.0,
                env={"ANTHROPIC_API_KEY": CANARY_KEY, "ANTHROPIC_API_BASE": fake.url},
            )
            local = LocalRunGateway(gateway.url, runs, 60.0)
            with use_gateway(local), use_fallback_model(gateway_fallback(chain, 0)):
                run = open_run(
                    AiderAdapter.gateway_wiring, request, operation_id="op-a", attempt_id="op-a:1"
                )
            assert run is not None
            token = run.request.env["ANTHROPIC_API_KEY"]
            with anthropic.Anthropic(base_url=gateway.url, api_key=token, max_retries=0) as c:
                answer = c.messages.create(
                    model=ANTHROPIC_MODEL,
                    max_tokens=20,
                    messages=MESSAGES,  # type: ignore[arg-type]
                )
            tally = run.close()
        stats = fake.stats()
    assert answer.model == FALLBACK
    fell = [e for e in events if isinstance(e, RequestFellBack)]
    assert [(e.model, e.fallback_model, e.task) for e in fell] == [
        (ANTHROPIC_MODEL, FALLBACK, "op-a")
    ]
    assert dict(stats.by_status) == {529: 2, 200: 1}
    assert tally is not None
    assert (tally.requests, tally.refused) == (3, 2)


def _spec(tmp_path: Path, model: str) -> TaskSpec:
    return TaskSpec(
        workflow_id="aider",
        task_id=model.replace("/", "-"),
        adapter="aider",
        model=model,
        workspace=tmp_path,
        timeout_s=60.0,
        prompt="Say hi",
        env={"ANTHROPIC_API_KEY": CANARY_KEY, "OPENAI_API_KEY": CANARY_KEY},
        inherit_env=False,
    )


def test_an_aider_alias_attempt_takes_its_providers_limiter(tmp_path: Path) -> None:
    """Sent straight to its provider (no gateway), an Aider attempt on ``sonnet`` or a bare
    ``gpt-4o`` is paced at its provider's limiter, the one an API task of that provider
    takes; a model of another provider is not paced."""
    state = tmp_path / "state"
    state.mkdir()
    engine = Engine(
        state,
        adapters={"aider": AiderAdapter()},
        breaker=None,
        rate_limits={"anthropic": ROOMY, "openai": ROOMY},
    )
    try:
        pacing = engine.pacing
        assert pacing is not None
        assert pacing.limiters is not None
        adapter = AiderAdapter()
        alias = pacing.limiter(_spec(tmp_path, "sonnet"), adapter)
        assert alias is pacing.limiters.limiter_for("anthropic", "sonnet")
        bare = pacing.limiter(_spec(tmp_path, "gpt-4o"), adapter)
        assert bare is pacing.limiters.limiter_for("openai", "gpt-4o")
        prefixed = pacing.limiter(_spec(tmp_path, f"anthropic/{FALLBACK}"), adapter)
        assert prefixed is pacing.limiters.limiter_for("anthropic", FALLBACK)
        assert pacing.limiter(_spec(tmp_path, "deepseek/deepseek-chat"), adapter) is None
    finally:
        engine.close()
