"""Fallback chains in the HTTP integrations, through the official SDK clients against the
fake provider: the chain's transport moves a same-wire-format request to the next
candidate (model, base URL and key rewritten); across providers, ``FallbackChain.acall``
with a client per candidate."""

from __future__ import annotations

import asyncio
from typing import Final

import anthropic
import openai
import pytest
from tests.adapters.api_server import ApiServer
from tests.adapters.api_wire import OpenAIChatWire
from tests.adapters.support import CANARY_KEY

from backstay.errors import ConfigError
from backstay.fakeprovider import FakeProvider, Fault, FaultKind, Scenario
from backstay.fallback import Candidate, FallbackChain
from backstay.integrations import (
    CANDIDATE_EXTENSION,
    anthropic_client,
    async_anthropic_client,
    async_openai_client,
    openai_client,
)
from backstay.policy.retry import RetryPolicy
from backstay.testing import capture_events

ONE: Final = RetryPolicy(name="one", max_attempts=1)
CHAIN_POLICY: Final = RetryPolicy(name="chain", max_attempts=3, initial_delay_s=0.01, jitter=0.0)
HI: Final = [{"role": "user", "content": "Say hello"}]


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARE_KEY", CANARY_KEY)


def _openai_pair(down_url: str, spare_url: str) -> FallbackChain:
    return FallbackChain(
        [
            Candidate(provider="openai", model="gpt-5-mini", base_url=f"{down_url}/v1"),
            Candidate(
                provider="openai",
                model="gpt-4.1",
                base_url=f"{spare_url}/v1",
                api_key_env="SPARE_KEY",
            ),
        ],
        policy=CHAIN_POLICY,
    )


def test_an_endpoint_in_an_outage_is_answered_by_the_next_compatible_one() -> None:
    down = Scenario(faults=(Fault(kind=FaultKind.SERVER_ERROR),))
    with FakeProvider(down) as a, FakeProvider(Scenario()) as b, capture_events() as events:
        chain = _openai_pair(a.url, b.url)
        with openai_client(fallback=chain, api_key=CANARY_KEY) as client:
            raw = client.chat.completions.with_raw_response.create(model="gpt-5-mini", messages=HI)
            reply = raw.parse()
        served_a, served_b = dict(a.stats().by_api), dict(b.stats().by_api)
    assert (served_a, served_b) == ({"openai-chat": 1}, {"openai-chat": 1})
    assert reply.model == "gpt-4.1"  # the body's model was rewritten for the spare
    assert raw.http_response.extensions[CANDIDATE_EXTENSION] == "openai/gpt-4.1@SPARE_KEY"
    (moved,) = [e.to_dict() for e in events.named("retry.fell_back")]
    assert (moved["from_candidate"], moved["kind"]) == ("openai/gpt-5-mini", "server_error")


def test_a_healthy_first_candidate_answers_itself() -> None:
    with FakeProvider(Scenario()) as a, FakeProvider(Scenario()) as b:
        chain = _openai_pair(a.url, b.url)
        with openai_client(fallback=chain, api_key=CANARY_KEY) as client:
            reply = client.chat.completions.create(model="gpt-5-mini", messages=HI)
        assert (dict(a.stats().by_api), dict(b.stats().by_api)) == ({"openai-chat": 1}, {})
    assert reply.model == "gpt-5-mini"


def test_an_invalid_request_is_not_moved_and_reaches_the_caller() -> None:
    invalid = Scenario(faults=(Fault(kind=FaultKind.CONTEXT_OVERFLOW),))
    with FakeProvider(invalid) as a, FakeProvider(Scenario()) as b:
        chain = _openai_pair(a.url, b.url)  # no context windows: nothing is "larger"
        client = openai_client(fallback=chain, api_key=CANARY_KEY)
        with client, pytest.raises(openai.BadRequestError):
            client.chat.completions.create(model="gpt-5-mini", messages=HI)
        assert dict(b.stats().by_api) == {}


def test_two_anthropic_models_share_one_client() -> None:
    down = Scenario(faults=(Fault(kind=FaultKind.OVERLOADED, model="claude-haiku-4-5"),))
    with FakeProvider(down) as fake:
        chain = FallbackChain(
            [
                Candidate(provider="anthropic", model="claude-haiku-4-5"),
                Candidate(provider="anthropic", model="claude-sonnet-4-5"),
            ],
            policy=CHAIN_POLICY,
        )
        client = anthropic_client(fallback=chain, api_key=CANARY_KEY, base_url=fake.url)
        with client:
            message = client.messages.create(model="claude-haiku-4-5", max_tokens=32, messages=HI)
        assert dict(fake.stats().by_api) == {"anthropic": 2}
    assert message.model == "claude-sonnet-4-5"


def test_a_stream_falls_back_before_its_first_byte_only() -> None:
    refused = Fault(kind=FaultKind.OVERLOADED, model="claude-haiku-4-5", first=1)
    broken = Fault(kind=FaultKind.STREAM_ERROR, model="claude-haiku-4-5", after_events=3)
    chain = FallbackChain(
        [
            Candidate(provider="anthropic", model="claude-haiku-4-5"),
            Candidate(provider="anthropic", model="claude-sonnet-4-5"),
        ],
        policy=CHAIN_POLICY,
    )
    with FakeProvider(Scenario(faults=(refused, broken))) as fake:
        client = anthropic_client(fallback=chain, api_key=CANARY_KEY, base_url=fake.url)
        with client:
            # Refused before the body (529): moved to the spare, which streams.
            with client.messages.stream(
                model="claude-haiku-4-5", max_tokens=32, messages=HI
            ) as stream:
                text = "".join(stream.text_stream)
            assert text
            assert stream.get_final_message().model == "claude-sonnet-4-5"
            # The primary is healthy again (its breaker is closed): a stream that breaks
            # after its first bytes reached the caller is the caller's to handle.
            with (
                pytest.raises(anthropic.APIStatusError),
                client.messages.stream(
                    model="claude-haiku-4-5", max_tokens=32, messages=HI
                ) as stream,
            ):
                "".join(stream.text_stream)
        assert dict(fake.stats().by_api) == {"anthropic": 3}


def test_a_chain_refuses_a_policy_of_its_own() -> None:
    chain = FallbackChain([Candidate(provider="openai", model="m")])
    with pytest.raises(ConfigError, match="fallback"):
        openai_client(fallback=chain, policy="standard", api_key=CANARY_KEY)


def test_the_async_client_falls_back_too() -> None:
    down = Scenario(faults=(Fault(kind=FaultKind.SERVER_ERROR),))

    async def ask(url_a: str, url_b: str) -> str:
        client = async_openai_client(fallback=_openai_pair(url_a, url_b), api_key=CANARY_KEY)
        async with client:
            reply = await client.chat.completions.create(model="gpt-5-mini", messages=HI)
        return reply.model

    with FakeProvider(down) as a, FakeProvider(Scenario()) as b:
        assert asyncio.run(ask(a.url, b.url)) == "gpt-4.1"


def test_across_providers_the_chain_calls_a_client_per_candidate() -> None:
    primary = Candidate(provider="anthropic", model="claude-haiku-4-5")
    spare = Candidate(provider="openai", model="gpt-5-mini", api_key_env="SPARE_KEY")
    down = Scenario(faults=(Fault(kind=FaultKind.SERVER_ERROR, model="claude-haiku-4-5"),))

    async def main(url: str) -> tuple[str, Candidate, int]:
        chain = FallbackChain([primary, spare], policy=CHAIN_POLICY)

        async def ask(c: Candidate) -> str:
            if c.provider == "anthropic":
                async with async_anthropic_client(
                    policy=ONE, api_key=CANARY_KEY, base_url=url
                ) as claude:
                    message = await claude.messages.create(
                        model=c.model, max_tokens=32, messages=HI
                    )
                return message.model
            async with async_openai_client(
                policy=ONE, api_key=CANARY_KEY, base_url=f"{url}/v1"
            ) as gpt:
                reply = await gpt.chat.completions.create(model=c.model, messages=HI)
            return reply.model

        answer = await chain.acall(ask)
        return answer.value, answer.candidate, answer.attempts

    with FakeProvider(down) as fake:
        value, candidate, attempts = asyncio.run(main(fake.url))
        assert dict(fake.stats().by_api) == {"anthropic": 1, "openai-chat": 1}
    assert (value, candidate, attempts) == ("gpt-5-mini", spare, 2)


def test_the_next_candidate_gets_its_own_url_model_and_key() -> None:
    wire = OpenAIChatWire(stream=False)
    with (
        ApiServer(lambda _r: wire.overloaded()) as down,
        ApiServer(lambda _r: wire.reply(("hi",), stream=False)) as spare,
    ):
        chain = _openai_pair(down.url, spare.url)
        with openai_client(fallback=chain, api_key="first-key") as client:
            client.chat.completions.create(model="gpt-5-mini", messages=HI)
        (first,), (second,) = down.seen(), spare.seen()
    assert (first.path, first.json()["model"]) == ("/v1/chat/completions", "gpt-5-mini")
    assert first.headers["authorization"] == "Bearer first-key"
    assert (second.path, second.json()["model"]) == ("/v1/chat/completions", "gpt-4.1")
    assert second.headers["authorization"] == f"Bearer {CANARY_KEY}"
    assert second.json()["messages"] == HI
