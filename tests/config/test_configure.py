"""``backstay.configure()``: the loaded file drives the library."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import backstay
from backstay import CircuitBreaker, FailureKind, RetryBudget
from backstay.policy.registry import DEFAULT_REGISTRY, use_breakers
from backstay.testing import FakeClock

CONFIG = """\
retry:
  default_policy: patient
  policies:
    patient:
      extends: standard
      max_attempts: 5
      initial_delay_s: 0.5
      jitter_mode: none
  operation_policies:
    agent: agent_dispatch
  circuit_breaker:
    failure_threshold: 2
    counted_kinds: [server_error]
  budget:
    ratio: 0.5
  rate_limits:
    openai/gpt-4o:
      requests_per_minute: 60
"""


@pytest.fixture
def configured(tmp_path: Path) -> Iterator[backstay.BackstayConfig]:
    path = tmp_path / "backstay.yaml"
    path.write_text(CONFIG, encoding="utf-8")
    try:
        yield backstay.configure(path, overrides=["retry.policies.patient.max_attempts=4"])
    finally:
        backstay.use_registry(DEFAULT_REGISTRY)
        use_breakers(None)  # configure() put calls with an operation under its breakers


def test_policy_names_resolve_in_the_configured_file(configured: backstay.BackstayConfig) -> None:
    clock = FakeClock()
    calls: list[int] = []

    def failing() -> None:
        calls.append(1)
        raise ConnectionResetError

    with pytest.raises(ConnectionResetError):
        backstay.call(failing, policy="patient", clock=clock)
    assert len(calls) == 4  # the --set override beats the file
    assert clock.sleeps == [0.5, 1.0, 2.0]


def test_the_default_policy_and_operations_come_from_the_file(
    configured: backstay.BackstayConfig,
) -> None:
    assert configured.registry.default.name == "patient"
    assert configured.registry.for_operation("agent").name == "agent_dispatch"


def test_the_sections_build_their_objects(configured: backstay.BackstayConfig) -> None:
    settings = configured.breaker_settings()
    assert settings.failure_threshold == 2
    assert settings.counted_kinds == frozenset({FailureKind.SERVER_ERROR})
    CircuitBreaker("openai", settings=settings)
    assert RetryBudget("llm", settings=configured.budget_settings()).settings.ratio == 0.5
    limiter = configured.rate_limiters().limiter_for("openai", "gpt-4o")
    assert limiter.settings.requests_per_minute == 60


def test_an_unknown_policy_name_fails_with_a_config_error() -> None:
    with pytest.raises(backstay.ConfigError, match="nope"):
        backstay.call(lambda: 1, policy="nope")


def test_a_call_without_a_policy_uses_the_configured_default(
    configured: backstay.BackstayConfig,
) -> None:
    clock = FakeClock()
    calls: list[int] = []

    def failing() -> None:
        calls.append(1)
        raise ConnectionResetError

    with pytest.raises(ConnectionResetError):
        backstay.call(failing, clock=clock)
    assert len(calls) == 4  # "patient" (4 attempts after --set), not "standard" (3)


def test_the_configured_circuit_breaker_guards_calls_with_an_operation(
    configured: backstay.BackstayConfig,
) -> None:
    calls: list[int] = []

    def overloaded() -> None:
        calls.append(1)
        raise backstay.AdapterError(backstay.Failure(code="ERR_HTTP_503_UNAVAILABLE"))

    for _ in range(2):
        with pytest.raises(backstay.AdapterError):
            backstay.call(overloaded, policy="no_retry", operation="llm")
    with pytest.raises(backstay.CircuitOpen):
        backstay.call(overloaded, policy="no_retry", operation="llm")
    assert len(calls) == 2
