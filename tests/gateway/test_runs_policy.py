"""The gateway's retry policy comes from the configuration: ``retry.policies.gateway`` of
backstay.yaml is what the gateway ``backstay run`` / ``batch`` / ``resume`` start retries
with (``agent_gateway(registry=...)``) and what ``backstay gateway --config`` serves with
(its flags overriding it); without one, ``GATEWAY_POLICY``."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import anthropic
import pytest
from tests.gateway.helpers import ANTHROPIC_MODEL, CANARY_KEY, MESSAGES
from tests.gateway.test_cli import WAIT_S, _command, _first_line

from backstay.adapters.gateway_wiring import current_gateway
from backstay.cli._gateway_runs import agent_gateway
from backstay.config import load_config
from backstay.fakeprovider import FakeProvider, Fault, FaultKind, Scenario
from backstay.gateway import GATEWAY_POLICY
from backstay.gateway.settings import configured_policy

ONE_ATTEMPT = """retry:
  policies:
    gateway:
      max_attempts: 1
      deadline_s: 120
"""


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "backstay.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _overloaded_once() -> Scenario:
    return Scenario(faults=(Fault(kind=FaultKind.OVERLOADED, first=1, retry_after_s=0),))


def test_the_configured_gateway_policy_is_used_and_the_built_in_one_otherwise(
    tmp_path: Path,
) -> None:
    configured = configured_policy(load_config(_config(tmp_path, ONE_ATTEMPT)).registry)
    assert (configured.name, configured.max_attempts, configured.deadline_s) == (
        "gateway",
        1,
        120.0,
    )
    assert configured_policy(load_config(_config(tmp_path, "{}\n")).registry) == GATEWAY_POLICY
    assert configured_policy(None) == GATEWAY_POLICY


@pytest.mark.parametrize(("text", "status", "requests"), [(ONE_ATTEMPT, 529, 1), ("{}\n", 200, 2)])
def test_an_agent_runs_gateway_retries_under_the_configurations_gateway_policy(
    tmp_path: Path, text: str, status: int, requests: int
) -> None:
    registry = load_config(_config(tmp_path, text)).registry
    with (
        FakeProvider(_overloaded_once()) as fake,
        agent_gateway(["claude-code"], registry=registry) as url,
    ):
        gateway = current_gateway()
        assert gateway is not None
        assert url is not None
        token = gateway.open_run(
            provider="anthropic",
            key=CANARY_KEY,
            upstream=fake.url,
            task="op-policy",
            attempt="op-policy:attempt_1",
            traceparent=None,
            model=ANTHROPIC_MODEL,
        )
        status_seen = _status(url, token)
        assert gateway.deadline_s == (120.0 if status == 529 else GATEWAY_POLICY.deadline_s)
        stats = fake.stats()
    assert (status_seen, stats.requests) == (status, requests)


def _status(url: str, key: str) -> int:
    """The status a client of ``url`` gets for one message (its own retries off)."""
    with anthropic.Anthropic(base_url=url, api_key=key, max_retries=0) as client:
        try:
            return client.messages.with_raw_response.create(
                model=ANTHROPIC_MODEL,
                max_tokens=20,
                messages=MESSAGES,  # type: ignore[arg-type]
            ).status_code
        except anthropic.APIStatusError as err:
            return err.status_code


def _serve_once(config: Path, *flags: str) -> tuple[int, int]:
    """``backstay gateway --config config`` in front of a provider whose first answer is a
    529: the status a client gets, and the requests the provider saw."""
    with FakeProvider(_overloaded_once()) as fake:
        proc = subprocess.Popen(
            _command("--port", "0", "--upstream", fake.url, "--config", str(config), *flags),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            line = _first_line(proc)
            assert line.startswith("gateway listening on http://127.0.0.1:"), line
            status = _status(line.split()[-1], CANARY_KEY)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.communicate(timeout=WAIT_S)
        return status, fake.stats().requests


def test_the_gateway_command_serves_with_the_configurations_policy_its_flags_over_it(
    tmp_path: Path,
) -> None:
    config = _config(tmp_path, ONE_ATTEMPT)
    assert _serve_once(config) == (529, 1)
    assert _serve_once(config, "--max-attempts", "2") == (200, 2)
