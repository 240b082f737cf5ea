"""bench/fallback.py: the scenario's arithmetic, the figures read from a request log, the
loopback guard, and a short run of the whole section through the real fake provider and
the real clients (litellm's row too when litellm is installed)."""

from __future__ import annotations

import importlib
import importlib.util
import socket
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
SHORT_S = 6.0


@pytest.fixture(scope="module")
def bench() -> Iterator[tuple[ModuleType, ModuleType]]:
    """``fallback`` and ``fallback_batch``, imported from bench/ as ``make bench`` does."""
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(BENCH))
        yield importlib.import_module("fallback"), importlib.import_module("fallback_batch")


def _entry(at: float, api: str, model: str, status: int, fault: str | None) -> dict[str, Any]:
    return {"time": at, "api": api, "model": model, "status": status, "fault": fault}


def test_scenario_puts_the_outage_in_the_middle_half_with_a_twelfth_for_cooldown(
    bench: tuple[ModuleType, ModuleType],
) -> None:
    _, batch = bench
    scenario = batch.Scenario(duration_s=60.0)
    assert (scenario.outage_start_s, scenario.outage_end_s) == (15.0, 45.0)
    assert scenario.cooldown_s == pytest.approx(5.0)
    assert scenario.calls == 600
    # 3 failures to detect it, then a probe as each of the 6 cooldowns but the first ends.
    assert scenario.allowance == batch.FAILURE_THRESHOLD + 5
    assert scenario.fault_flag() == "overloaded:api=anthropic:start_s=15:outage_s=30"


def test_result_counts_the_down_primary_and_the_return_from_the_log(
    bench: tuple[ModuleType, ModuleType],
) -> None:
    _, batch = bench
    scenario = batch.Scenario(duration_s=12.0)  # outage 3 s to 9 s, cooldown 1 s
    started = 1000.0
    primary, fallback = batch.PRIMARY, batch.FALLBACK
    log = [
        _entry(started + 1.0, primary[0], primary[1], 200, None),
        *(_entry(started + 3.0 + i, primary[0], primary[1], 529, "overloaded") for i in range(12)),
        *(_entry(started + 3.1 + i, "openai-chat", fallback[1], 200, None) for i in range(5)),
        _entry(started + 9.25, primary[0], primary[1], 200, None),
    ]
    calls = [
        batch.Call(started, started + 0.5, "anthropic"),
        batch.Call(started, started + 9.5, None),
    ]
    result = batch._result("x", scenario, started=started, calls=calls, log=log, refused=[])
    assert (result.down_requests, result.wasted) == (12, 12 - scenario.allowance)
    assert (result.fallback_served, result.primary_served) == (5, 2)
    assert result.back_on_primary_s == pytest.approx(0.25)
    assert (result.succeeded, result.failed, result.requests) == (1, 1, 19)
    assert result.completion_s == pytest.approx(9.5)
    assert result.slowest_call_s == pytest.approx(9.5)
    assert result.p99_before_s == pytest.approx(9.5)  # both calls started before 3 s


def test_loopback_guard_refuses_other_addresses_before_any_packet(
    bench: tuple[ModuleType, ModuleType], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, batch = bench
    reached: list[Any] = []
    # Stand-ins for the real calls underneath: nothing here can touch the network.
    monkeypatch.setattr(socket.socket, "connect", lambda _s, address: reached.append(address))
    monkeypatch.setattr(socket.socket, "connect_ex", lambda _s, address: reached.append(address))
    monkeypatch.setattr(socket, "getaddrinfo", lambda host, *_a, **_k: reached.append(host))
    refused = batch.loopback_only()
    with socket.socket() as sock:
        with pytest.raises(ConnectionRefusedError):
            sock.connect(("192.0.2.1", 443))
        sock.connect(("127.0.0.1", 9))
    with pytest.raises(ConnectionRefusedError):
        socket.getaddrinfo("models.example", 443)
    socket.getaddrinfo("localhost", 9)
    assert refused == ["192.0.2.1", "models.example"]
    assert reached == [("127.0.0.1", 9), "localhost"]


def test_short_run_falls_back_during_the_outage_and_returns_after_it(
    bench: tuple[ModuleType, ModuleType], capsys: pytest.CaptureFixture[str]
) -> None:
    fallback, batch = bench
    results = fallback.report(SHORT_S)
    printed = capsys.readouterr().out
    expected = ["backstay", "litellm"] if importlib.util.find_spec("litellm") else ["backstay"]
    assert [r.client for r in results] == expected
    scenario = batch.Scenario(duration_s=SHORT_S)
    for result in results:
        assert (result.succeeded, result.failed) == (scenario.calls, 0), result
        assert result.down_requests >= batch.FAILURE_THRESHOLD, result
        assert result.fallback_served > 0, result
        assert result.primary_served + result.fallback_served == scenario.calls, result
        assert result.back_on_primary_s is not None, result
        assert result.outside_connections == 0, result
        assert f"  {result.client} " in printed
    assert ("backstay / litellm:" in printed) == (len(results) == 2)
