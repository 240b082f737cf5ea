"""The API adapters against the project's fake provider (``backstay.fakeprovider``): the
adapter contract with each scenario mapped onto the provider's faults, and the real-part
checks the fake makes possible (replays of an idempotency key, usage it counted itself,
errors inside its streams, the httpx transport retrying its faults).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar, Final

import pytest
from tests.adapters.api_support import dispatch, key_env
from tests.adapters.support import CANARY_KEY

from backstay.adapters.api import _tls
from backstay.adapters.api.anthropic import AnthropicApiAdapter
from backstay.adapters.api.base import ApiAdapter
from backstay.adapters.api.gemini import GeminiApiAdapter
from backstay.adapters.api.openai import OpenAIApiAdapter
from backstay.adapters.capture import Capture
from backstay.adapters.contract import Adapter, AgentRequest, AgentResult, AgentStatus
from backstay.errors import AdapterError
from backstay.fakeprovider import FakeProvider, Fault, FaultKind, Reply, Scenario
from backstay.fakeprovider.scenario import RateLimit
from backstay.integrations import anthropic_client, gemini_client, openai_client
from backstay.policy.retry import RetryPolicy
from backstay.taxonomy import FailureKind
from backstay.testing.contract import RETRY_AFTER_S, AdapterContract, ContractScenario
from backstay.testing.fakeclock import FakeClock

# The contract's scenarios as fake-provider faults.
FAULTS: Final[Mapping[ContractScenario, tuple[Fault, ...]]] = {
    "success": (),
    "network_error": (Fault(kind=FaultKind.RESET, first=2, after_events=0),),
    "rate_limit_with_wait": (
        Fault(kind=FaultKind.RATE_LIMIT, first=1, retry_after_s=RETRY_AFTER_S),
    ),
    "context_overflow": (Fault(kind=FaultKind.CONTEXT_OVERFLOW),),
    "content_policy": (Fault(kind=FaultKind.CONTENT_POLICY),),
    "quota_exhausted": (Fault(kind=FaultKind.QUOTA_EXHAUSTED),),
    "hang": (Fault(kind=FaultKind.HANG),),
}
CLASSES: Final[Mapping[str, type[ApiAdapter]]] = {
    "anthropic-api": AnthropicApiAdapter,
    "openai-api": OpenAIApiAdapter,
    "gemini-api": GeminiApiAdapter,
}


def _url(fake: FakeProvider, adapter: str) -> str:
    return fake.url + ("/v1" if adapter == "openai-api" else "")


class _FakeContract(AdapterContract):
    runs_subprocess: ClassVar[bool] = False
    adapter_name: ClassVar[str] = ""
    api: ClassVar[str] = "chat"
    stream: ClassVar[bool] = True
    fakes: dict[str, FakeProvider]

    @pytest.fixture(autouse=True)
    def _fakes(self) -> Iterator[None]:
        self.fakes = {}
        yield
        for fake in self.fakes.values():
            fake.stop()

    def _fake(self, scenario: ContractScenario) -> FakeProvider:
        if scenario not in self.fakes:
            fake = FakeProvider(Scenario(faults=FAULTS[scenario]))
            fake.__enter__()
            self.fakes[scenario] = fake
        return self.fakes[scenario]

    def make_adapter(self, scenario: ContractScenario) -> Adapter:
        return CLASSES[self.adapter_name]()

    def adapter_config(self, scenario: ContractScenario) -> Mapping[str, Any]:
        config: dict[str, Any] = {
            "base_url": _url(self._fake(scenario), self.adapter_name),
            "stream": self.stream,
        }
        if self.api != "chat":
            config["api"] = self.api
        return config

    def adapter_env(self, scenario: ContractScenario) -> Mapping[str, str]:
        return key_env(self.adapter_name)


class TestAnthropicApiOnTheFakeProvider(_FakeContract):
    adapter_name = "anthropic-api"


class TestOpenAIChatOnTheFakeProvider(_FakeContract):
    adapter_name = "openai-api"


class TestOpenAIResponsesOnTheFakeProvider(_FakeContract):
    adapter_name = "openai-api"
    api = "responses"
    stream = False


class TestGeminiApiOnTheFakeProvider(_FakeContract):
    adapter_name = "gemini-api"


SETUPS = [
    pytest.param(("anthropic-api", "chat"), id="anthropic"),
    pytest.param(("openai-api", "chat"), id="openai-chat"),
    pytest.param(("openai-api", "responses"), id="openai-responses"),
    pytest.param(("gemini-api", "chat"), id="gemini"),
]


def _config(fake: FakeProvider, adapter: str, api: str, **extra: Any) -> dict[str, Any]:
    config = {"base_url": _url(fake, adapter), **extra}
    if api != "chat":
        config["api"] = api
    return config


@pytest.mark.parametrize("setup", SETUPS)
def test_a_second_attempt_with_the_same_operation_is_a_replay(
    setup: tuple[str, str], tmp_path: Path
) -> None:
    """The key is the operation id, so the provider can tell a retry from a new call."""
    name, api = setup
    with FakeProvider() as fake:
        config = _config(fake, name, api)
        first, _ = dispatch(CLASSES[name](), tmp_path, config=config, env=key_env(name))
        again, _ = dispatch(CLASSES[name](), tmp_path, config=config, env=key_env(name), attempt=2)
        other, _ = dispatch(
            CLASSES[name](), tmp_path, config=config, env=key_env(name), operation_id="op-2"
        )
        stats = fake.stats()
    assert isinstance(first, AgentResult)
    assert isinstance(again, AgentResult)
    assert isinstance(other, AgentResult)
    assert again.output == first.output
    assert stats.replays == 1
    assert stats.requests == 3


@pytest.mark.parametrize("setup", SETUPS)
def test_usage_and_cost_in_metrics_are_what_the_provider_counted(
    setup: tuple[str, str], tmp_path: Path
) -> None:
    name, api = setup
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Write one short sentence about the sea.", encoding="utf-8")
    prices = {"fake-model": {"input_per_mtok": 2.0, "output_per_mtok": 10.0}}
    with FakeProvider() as fake:
        config = _config(fake, name, api, prices=prices)
        code = CLASSES[name]().run(
            "fake-model", prompt, tmp_path, tmp_path / "out", config, 30.0, env=key_env(name)
        )
        stats = fake.stats()
    assert code == 0
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert (metrics["tokens_input"], metrics["tokens_output"]) == (
        stats.input_tokens,
        stats.output_tokens,
    )
    assert metrics["tokens_input"] > 0
    assert metrics["tokens_output"] > 0
    assert metrics["api_calls"] == 1
    expected = (stats.input_tokens * 2.0 + stats.output_tokens * 10.0) / 1e6
    assert metrics["cost_usd"] == pytest.approx(expected)


# Stream events the fake sends before its error: past the preamble, into the text.
EVENTS_BEFORE_ERROR: Final = {
    "anthropic": 5,
    "openai-chat": 3,
    "openai-responses": 7,
    "gemini": 2,
}
LONG_REPLY: Final = " ".join(f"word{i}" for i in range(60))


@pytest.mark.parametrize("setup", SETUPS)
def test_an_error_inside_the_fake_stream_keeps_the_partial_output(
    setup: tuple[str, str], tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    name, api = setup
    after = EVENTS_BEFORE_ERROR[request.node.callspec.id]
    scenario = Scenario(
        reply=Reply(text=LONG_REPLY),
        faults=(Fault(kind=FaultKind.STREAM_ERROR, first=1, after_events=after),),
    )
    with FakeProvider(scenario) as fake:
        config = _config(fake, name, api, stream=True)
        outcome, out = dispatch(CLASSES[name](), tmp_path, config=config, env=key_env(name))
    assert isinstance(outcome, AdapterError), outcome
    assert outcome.failure.kind is FailureKind.SERVER_ERROR, outcome.failure
    assert outcome.partial_output
    assert LONG_REPLY.startswith(outcome.partial_output)
    assert outcome.failure.details["stream_interrupted"] is True
    assert (out / "stdout.log").read_text() == outcome.partial_output


POLICY = RetryPolicy(
    name="t", max_attempts=4, initial_delay_s=1.0, multiplier=2.0, jitter=0.0, max_delay_s=10.0
)


def test_the_integration_clients_retry_the_fake_providers_faults() -> None:
    clock = FakeClock()
    scenario = Scenario(
        faults=(
            Fault(kind=FaultKind.OVERLOADED, api="anthropic", first=2),
            Fault(kind=FaultKind.RATE_LIMIT, api="openai", first=1, retry_after_s=3.0),
            Fault(kind=FaultKind.UNAVAILABLE, api="gemini", first=1),
        )
    )
    with FakeProvider(scenario) as fake:
        claude = anthropic_client(policy=POLICY, clock=clock, api_key=CANARY_KEY, base_url=fake.url)
        gpt = openai_client(
            policy=POLICY, clock=clock, api_key=CANARY_KEY, base_url=f"{fake.url}/v1"
        )
        gemini = gemini_client(policy=POLICY, clock=clock, api_key=CANARY_KEY, base_url=fake.url)
        with claude, gpt:
            claude.messages.create(
                model="m", max_tokens=20, messages=[{"role": "user", "content": "hi"}]
            )
            gpt.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        gemini.models.generate_content(model="m", contents="hi")
        gemini.close()
        stats = fake.stats()
    assert stats.by_fault == {"overloaded": 2, "rate_limit": 1, "unavailable": 1}
    assert stats.by_status.get(200) == 3
    assert clock.sleeps[:2] == [1.0, 2.0]
    assert clock.sleeps[2] == pytest.approx(3.0, abs=0.1)
    assert len(clock.sleeps) == 4


@pytest.mark.parametrize("setup", SETUPS)
def test_attempts_share_one_tls_context_instead_of_building_their_own(
    setup: tuple[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Loading the CA bundle costs tens of ms: the SDK clients of every attempt share the
    process's context (``backstay.adapters.api._tls``) rather than each building one."""
    with contextlib.suppress(ImportError):  # aiohttp builds a context of its own on import
        import aiohttp.connector  # noqa: F401, PLC0415
    import httpcore2  # noqa: PLC0415 - the SDKs' HTTP library, patched for this test only

    built: list[str] = []
    inside: list[bool] = []
    system_default = httpcore2.default_ssl_context
    stdlib_default = ssl.create_default_context

    def counted_system(**kwargs: Any) -> ssl.SSLContext:
        built.append("httpcore2")
        inside.append(True)
        try:
            return system_default(**kwargs)
        finally:
            inside.pop()

    def counted_stdlib(*args: Any, **kwargs: Any) -> ssl.SSLContext:
        if not inside:  # not the one httpcore2 builds with it
            built.append("ssl")
        return stdlib_default(*args, **kwargs)

    monkeypatch.setattr(_tls, "_contexts", {})
    monkeypatch.setattr(httpcore2, "default_ssl_context", counted_system)
    monkeypatch.setattr(ssl, "create_default_context", counted_stdlib)
    name, api = setup
    with FakeProvider() as fake:
        config = _config(fake, name, api)
        for proxied in (False, True):
            if proxied:  # a proxy variable: a plain-http client may reach a proxy over TLS
                monkeypatch.setenv("ALL_PROXY", "http://127.0.0.1:9")
                monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")  # not for this host
            for attempt in (1, 2, 3):
                result, _ = dispatch(
                    CLASSES[name](), tmp_path, config=config, env=key_env(name), attempt=attempt
                )
                assert isinstance(result, AgentResult)
                assert result.status is AgentStatus.SUCCEEDED
            # The fake provider's URL is plain http: with no proxy variable, the Anthropic
            # and OpenAI clients load no CA bundle at all (gemini-api builds its one).
            unbuilt = not proxied and name != "gemini-api"
            assert built == ([] if unbuilt else ["httpcore2"])


def _answer_headers(
    adapter: ApiAdapter, tmp_path: Path, *, config: Mapping[str, Any], env: Mapping[str, str]
) -> Mapping[str, str]:
    """The rate-limit headers one attempt of ``adapter`` recorded in its capture."""
    request = AgentRequest(
        model="contract-model",
        workspace=tmp_path,
        output_dir=tmp_path / "attempt",
        timeout_s=30.0,
        prompt="Say hello.",
        env=env,
        config=config,
    )

    async def go() -> Mapping[str, str]:
        with Capture(request.output_dir) as capture:
            with contextlib.suppress(AdapterError):
                await adapter.dispatch(
                    request, operation_id="op-1", attempt_id="op-1/1", capture=capture
                )
            return capture.rate_limit_headers

    return asyncio.run(go())


@pytest.mark.parametrize("setup", SETUPS[:3])  # Gemini's answers carry no such headers
def test_an_attempt_records_the_rate_limit_headers_of_the_providers_answer(
    setup: tuple[str, str], tmp_path: Path
) -> None:
    name, api = setup
    with FakeProvider(Scenario(rate_limit=RateLimit(requests_per_minute=60))) as fake:
        headers = _answer_headers(
            CLASSES[name](), tmp_path, config=_config(fake, name, api), env=key_env(name)
        )
    limit = (
        "anthropic-ratelimit-requests-limit"
        if name == "anthropic-api"
        else ("x-ratelimit-limit-requests")
    )
    assert headers[limit] == "60"
    assert all("ratelimit" in h or h.startswith("retry-after") for h in headers)


@pytest.mark.parametrize("setup", SETUPS[:3])  # Gemini names its wait in the body (RetryInfo)
def test_a_refused_attempt_records_the_wait_its_answer_named(
    setup: tuple[str, str], tmp_path: Path
) -> None:
    name, api = setup
    refusal = Fault(kind=FaultKind.RATE_LIMIT, first=1, retry_after_s=3.0)
    with FakeProvider(Scenario(faults=(refusal,))) as fake:
        headers = _answer_headers(
            CLASSES[name](), tmp_path, config=_config(fake, name, api), env=key_env(name)
        )
    assert headers["retry-after"] == "3"
