"""``backstay serve`` and ``backstay health``: metrics and health of a state directory
over HTTP, and the same check printed; ``batch --serve-port`` while the batch runs."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.cli.support import invoke, write_suite
from tests.observe.support import LIMIT_S, finished_batch, serving


def _get(url: str) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as reply:  # noqa: S310 - loopback
            return reply.status, reply.headers["Content-Type"], reply.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.headers["Content-Type"], err.read().decode()


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return finished_batch(tmp_path_factory.mktemp("batch"))


@pytest.fixture(scope="module")
def served(state: Path) -> Iterator[str]:
    for _, url in serving(["serve", "--state-dir", str(state), "--port", "0"]):
        yield url


def test_metrics_are_served_as_prometheus_text(served: str) -> None:
    status, kind, body = _get(served + "/metrics")
    assert status == 200
    assert kind.startswith("text/plain; version=0.0.4")
    assert 'backstay_tasks{state="failed"} 1' in body


def test_healthz_passes_while_it_serves(served: str) -> None:
    status, kind, body = _get(served + "/healthz")
    assert (status, kind) == (200, "application/health+json")
    assert json.loads(body)["status"] == "pass"


def test_readyz_warns_about_open_escalations(served: str) -> None:
    status, kind, body = _get(served + "/readyz")
    assert (status, kind) == (200, "application/health+json")
    data = json.loads(body)
    assert data["status"] == "warn"
    assert data["checks"]["escalations:open"][0]["observedValue"] == 2


def test_an_unknown_path_is_404(served: str) -> None:
    assert _get(served + "/nothing")[0] == 404


def test_serve_without_a_batch_exits_2(tmp_path: Path) -> None:
    result = invoke("serve", "--state-dir", tmp_path / "none", "--port", "0")
    assert result.exit_code == 2
    assert "no batch ran there" in result.output


def test_health_prints_the_readiness_check(state: Path) -> None:
    result = invoke("health", "--state-dir", state)
    assert result.exit_code == 0, result.output
    assert "status: warn" in result.stdout
    as_json = invoke("health", "--state-dir", state, "--json")
    assert json.loads(as_json.stdout)["checks"]["store:writable"][0]["status"] == "pass"


def test_batch_serves_metrics_while_it_runs(tmp_path: Path) -> None:
    slow = [[{"sleep": 3.0}, {"result": "done", "input_tokens": 1, "output_tokens": 1}]]
    suite = write_suite(tmp_path, ["slow"], scenario=slow)
    state = tmp_path / "state"
    args = ["batch", str(suite), "--state-dir", str(state), "--serve-port", "0"]
    for proc, url in serving(args):
        deadline = time.monotonic() + 20
        body = ""
        while 'backstay_tasks{state="running"} 1' not in body and time.monotonic() < deadline:
            body = _get(url + "/metrics")[2]
            time.sleep(0.1)
        assert 'agent_active_sessions{framework="mock"} 1' in body
        assert proc.wait(timeout=LIMIT_S) == 0
