"""A shared gateway opening runs over HTTP (``backstay gateway --agent-runs``, used by
``backstay run|batch|resume --gateway URL``): with its token a process opens a run and
gets a run token, the run's requests reach the upstream with the real key, and closing it
returns what the gateway counted; without the token, or at a gateway with none, nothing
is opened, with an error naming --gateway."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from typing import Final

import anthropic
import pytest
from tests.gateway.helpers import ANTHROPIC_MODEL, CANARY_KEY, FAST_POLICY, MESSAGES

from backstay.errors import ConfigError
from backstay.fakeprovider import FakeProvider, Fault, FaultKind, Scenario
from backstay.gateway import Gateway, GatewaySettings, RunTokens, Upstreams
from backstay.gateway.run_admin import RemoteRunGateway

GATEWAY_TOKEN: Final = "shared-gateway-token-0123456789"
MAIN: Final = "from backstay.cli import main; main()"


@pytest.fixture
def shared() -> Iterator[tuple[Gateway, FakeProvider]]:
    faults = (Fault(kind=FaultKind.OVERLOADED, first=1, retry_after_s=0.001),)
    with FakeProvider(Scenario(faults=faults)) as fake:
        settings = GatewaySettings(
            port=0, policy=FAST_POLICY, upstreams=Upstreams.all(fake.url), token=GATEWAY_TOKEN
        )
        with Gateway(settings, runs=RunTokens()) as gateway:
            yield gateway, fake


def test_a_run_opened_over_http_is_served_and_counted(
    shared: tuple[Gateway, FakeProvider],
) -> None:
    gateway, fake = shared
    remote = RemoteRunGateway(gateway.url, GATEWAY_TOKEN)
    assert remote.deadline_s == FAST_POLICY.deadline_s
    token = remote.open_run(
        provider="anthropic",
        key=CANARY_KEY,
        upstream=None,
        task="op",
        attempt="op/1",
        traceparent=None,
        model=ANTHROPIC_MODEL,
    )
    # No gateway token on the request: the run token admits it.
    with anthropic.Anthropic(base_url=gateway.url, api_key=token, max_retries=0) as client:
        client.messages.create(model=ANTHROPIC_MODEL, max_tokens=20, messages=MESSAGES)  # type: ignore[arg-type]
    tally = remote.close_run(token)
    stats = fake.stats()
    assert tally is not None
    assert (tally.requests, tally.refused) == (stats.requests, 1) == (2, 1)
    assert tally.output_tokens == stats.output_tokens
    assert remote.close_run(token) is None  # revoked
    with (
        anthropic.Anthropic(base_url=gateway.url, api_key=token, max_retries=0) as client,
        pytest.raises(anthropic.AuthenticationError),
    ):
        client.messages.create(model=ANTHROPIC_MODEL, max_tokens=20, messages=MESSAGES)  # type: ignore[arg-type]


def test_a_wrong_token_opens_nothing(shared: tuple[Gateway, FakeProvider]) -> None:
    gateway, _fake = shared
    with pytest.raises(ConfigError, match="answered 401") as refused:
        RemoteRunGateway(gateway.url, "not-the-gateway-token-at-all")
    assert refused.value.where == "--gateway"
    assert len(gateway.runs or ()) == 0


def test_a_gateway_without_a_token_opens_no_runs_over_http() -> None:
    with (
        FakeProvider(Scenario()) as fake,
        Gateway(
            GatewaySettings(port=0, upstreams=Upstreams.all(fake.url)), runs=RunTokens()
        ) as gateway,
        pytest.raises(ConfigError, match="answered 403"),
    ):
        RemoteRunGateway(gateway.url, GATEWAY_TOKEN)


def test_an_unreachable_gateway_is_named() -> None:
    with pytest.raises(
        ConfigError, match=re.escape("cannot reach the gateway at http://127.0.0.1:9")
    ):
        RemoteRunGateway("http://127.0.0.1:9", GATEWAY_TOKEN)


def _command(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", MAIN, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env,
    )


def test_agent_runs_without_a_token_is_a_usage_error() -> None:
    env = {k: v for k, v in os.environ.items() if k != "BACKSTAY_GATEWAY_TOKEN"}
    done = _command("gateway", "--agent-runs", "--port", "0", env=env)
    assert done.returncode == 2
    assert "--agent-runs needs a token" in done.stderr
    assert "Traceback" not in done.stderr


def test_run_with_gateway_and_no_gateway_is_a_usage_error(tmp_path: object) -> None:
    env = {**os.environ, "BACKSTAY_GATEWAY_TOKEN": GATEWAY_TOKEN}
    prompt = f"{tmp_path}/prompt.txt"
    with open(prompt, "w", encoding="utf-8") as file:
        file.write("hi")
    done = _command(
        "run",
        "--adapter",
        "claude-code",
        "--model",
        ANTHROPIC_MODEL,
        "--prompt-file",
        prompt,
        "--workspace",
        str(tmp_path),
        "--output-dir",
        f"{tmp_path}/out",
        "--no-gateway",
        "--gateway",
        "http://127.0.0.1:9",
        env=env,
    )
    assert done.returncode == 2, done.stderr
    assert "--gateway" in done.stderr
    assert "Traceback" not in done.stderr
