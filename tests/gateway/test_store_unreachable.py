"""A gateway whose rate limiters and breakers are in a Redis store (``--store redis://…``)
that stops answering: each request gets a 503 in its provider's format naming the store
(never its password), with a ``retry-after``, and is not sent; the provider is not
blamed (no 502 "the upstream failed"). Through the official SDKs and a real
``redis-server`` stopped by its PID."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import anthropic
import openai
import pytest
import redis
from tests.gateway.helpers import (
    ANTHROPIC_MODEL,
    CANARY_KEY,
    FAST_POLICY,
    MESSAGES,
    OPENAI_MODEL,
    anthropic_client,
    openai_client,
)
from tests.redis_server import start_redis

from backstay.breaker import BreakerRegistry
from backstay.fakeprovider import FakeProvider, Scenario
from backstay.gateway import Gateway, GatewaySettings, Upstreams
from backstay.store.location import parse_store
from backstay.store.open import open_stores

PASSWORD: Final = "store-password-0b1c2d3e"


def test_a_store_that_stops_answering_gets_each_request_a_503_unsent(tmp_path: Path) -> None:
    server = start_redis()
    try:
        admin = redis.Redis(port=server.port)
        admin.config_set("requirepass", PASSWORD)
        admin.close()
        location = parse_store(f"redis://:{PASSWORD}@127.0.0.1:{server.port}/0?namespace=gone")
        bundle = open_stores(location, state_dir=tmp_path)
        try:
            with FakeProvider(Scenario()) as fake:
                settings = GatewaySettings(
                    port=0, policy=FAST_POLICY, upstreams=Upstreams.all(fake.url)
                )
                breakers = BreakerRegistry(settings=settings.breaker, store=bundle.breakers)
                limiters = bundle.rate_limiter_registry({})
                with Gateway(settings, breakers=breakers, limiters=limiters) as gateway:
                    with anthropic_client(gateway.url) as client:
                        client.messages.create(
                            model=ANTHROPIC_MODEL,
                            max_tokens=20,
                            messages=MESSAGES,  # type: ignore[arg-type]
                        )
                        server.stop()
                        with pytest.raises(anthropic.InternalServerError) as raised:
                            client.with_options(max_retries=0).messages.create(
                                model=ANTHROPIC_MODEL,
                                max_tokens=20,
                                messages=MESSAGES,  # type: ignore[arg-type]
                            )
                    with (
                        openai_client(gateway.url) as other,
                        pytest.raises(openai.InternalServerError) as openai_raised,
                    ):
                        other.with_options(max_retries=0).chat.completions.create(
                            model=OPENAI_MODEL,
                            messages=MESSAGES,  # type: ignore[arg-type]
                        )
                sent = fake.stats().requests
        finally:
            bundle.close()
    finally:
        server.stop()
    assert raised.value.status_code == 503
    body = raised.value.body
    assert isinstance(body, dict)
    assert body["error"]["type"] == "overloaded_error"
    message = body["error"]["message"]
    assert f"the shared store {location.display} does not answer" in message
    assert "the upstream failed" not in message
    assert raised.value.response.headers["retry-after"] == "1"
    assert openai_raised.value.status_code == 503
    assert sent == 1  # only the request before the store went
    for text in (message, str(openai_raised.value.body)):
        assert PASSWORD not in text
        assert CANARY_KEY not in text
