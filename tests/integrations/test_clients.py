"""The official SDK clients with backstay's retries in and theirs out, against a real
local server in each provider's wire format; waits are taken on a ``FakeClock``."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from typing import Any

import anthropic
import openai
import pytest
from tests.adapters.api_server import ApiServer, Canned, Recorded
from tests.adapters.api_wire import AnthropicWire, GeminiWire, OpenAIChatWire
from tests.adapters.support import CANARY_KEY

from backstay.errors import ConfigError
from backstay.integrations import (
    anthropic_client,
    async_anthropic_client,
    async_openai_client,
    gemini_client,
    openai_client,
)
from backstay.policy.retry import RetryPolicy
from backstay.testing.fakeclock import FakeClock

POLICY = RetryPolicy(
    name="t", max_attempts=4, initial_delay_s=1.0, multiplier=2.0, jitter=0.0, max_delay_s=10.0
)


def script(*replies: Canned) -> Callable[[Recorded], Canned]:
    counter = itertools.count()

    def respond(_request: Recorded) -> Canned:
        return replies[min(next(counter), len(replies) - 1)]

    return respond


def _keys(server: ApiServer) -> set[str]:
    return {r.headers["idempotency-key"] for r in server.seen()}


def test_the_anthropic_client_retries_an_overload_under_the_policy() -> None:
    wire, clock = AnthropicWire(stream=False), FakeClock()
    with ApiServer(
        script(wire.overloaded(), wire.overloaded(), wire.reply(("hi",), stream=False))
    ) as server:
        client = anthropic_client(
            policy=POLICY, clock=clock, api_key=CANARY_KEY, base_url=server.url
        )
        with client:
            assert client.max_retries == 0
            message = client.messages.create(
                model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
            )
        assert message.content[0].text == "hi"
        assert len(server.seen()) == 3
        assert len(_keys(server)) == 1
    assert clock.sleeps == [1.0, 2.0]


def test_a_quota_error_reaches_the_caller_after_one_request() -> None:
    """The SDK alone would send this 429 three times: its rule never reads the body."""
    wire, clock = OpenAIChatWire(stream=False), FakeClock()
    with ApiServer(script(wire.quota())) as server:
        client = openai_client(
            policy=POLICY, clock=clock, api_key=CANARY_KEY, base_url=f"{server.url}/v1"
        )
        with client, pytest.raises(openai.RateLimitError) as info:
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert info.value.code == "insufficient_quota"
        assert len(server.seen()) == 1
    assert clock.sleeps == []


def test_the_openai_client_waits_the_retry_after() -> None:
    wire, clock = OpenAIChatWire(stream=False), FakeClock()
    with ApiServer(script(wire.rate_limited(7.0), wire.reply(("ok",), stream=False))) as server:
        client = openai_client(
            policy=POLICY, clock=clock, api_key=CANARY_KEY, base_url=f"{server.url}/v1"
        )
        with client:
            done = client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}]
            )
        assert done.choices[0].message.content == "ok"
    assert clock.sleeps == pytest.approx([7.05])


def test_the_async_clients_retry_too() -> None:
    anthropic_wire, openai_wire, clock = AnthropicWire(), OpenAIChatWire(), FakeClock()

    async def go(url: str) -> tuple[str, str]:
        a = async_anthropic_client(policy=POLICY, clock=clock, api_key=CANARY_KEY, base_url=url)
        o = async_openai_client(
            policy=POLICY, clock=clock, api_key=CANARY_KEY, base_url=f"{url}/v1"
        )
        async with a, o:
            first = await a.messages.create(
                model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
            )
            second = await o.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}]
            )
        return first.content[0].text, str(second.choices[0].message.content)

    replies = script(
        anthropic_wire.overloaded(),
        anthropic_wire.reply(("a",), stream=False),
        openai_wire.overloaded(),
        openai_wire.reply(("o",), stream=False),
    )
    with ApiServer(replies) as server:
        assert asyncio.run(go(server.url)) == ("a", "o")
        assert len(server.seen()) == 4
    assert clock.sleeps == [1.0, 1.0]


def test_the_gemini_client_retries_sync_and_async() -> None:
    wire, clock = GeminiWire(stream=False), FakeClock()
    ok = wire.reply(("g",), stream=False)
    with ApiServer(script(wire.overloaded(), ok, wire.overloaded(), ok)) as server:
        client = gemini_client(policy=POLICY, clock=clock, api_key=CANARY_KEY, base_url=server.url)
        assert client.models.generate_content(model="m", contents="hi").text == "g"

        async def go() -> Any:
            try:
                return await client.aio.models.generate_content(model="m", contents="hi")
            finally:
                await client.aio.aclose()

        assert asyncio.run(go()).text == "g"
        client.close()
        assert len(server.seen()) == 4
    assert clock.sleeps == [1.0, 1.0]


@pytest.mark.parametrize("name", ["max_retries", "http_client"])
@pytest.mark.parametrize("build", [anthropic_client, openai_client])
def test_a_second_retry_loop_is_refused(name: str, build: Any) -> None:
    with pytest.raises(ConfigError) as info:
        build(policy=POLICY, api_key=CANARY_KEY, **{name: 2})
    assert info.value.where == name
    assert "two retry loops" in str(info.value)


def test_the_clients_are_the_sdks_own_classes() -> None:
    client = anthropic_client(api_key=CANARY_KEY)
    assert isinstance(client, anthropic.Anthropic)
    client.close()
