"""``MetricsServer`` over a batch recorded in a real ``redis-server``: the metrics and the
readiness come from the shared store, not from a state directory, and a store that stops
answering makes ``/readyz`` fail at once (never wait)."""

from __future__ import annotations

import dataclasses
import http.client
import json
import shutil
from pathlib import Path
from typing import Any, Final

import pytest
from tests.cli.support import FOUR_OUTCOMES, invoke, write_suite
from tests.redis_server import start_redis

from backstay.errors import ConfigError
from backstay.observe.server import MetricsServer
from backstay.store.location import STORE_ENV_VAR, StoreLocation, StoreUnavailable, parse_store

WAIT_S: Final = 10.0


@pytest.fixture(autouse=True)
def _no_stray_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BACKSTAY_CONFIG", raising=False)
    monkeypatch.delenv(STORE_ENV_VAR, raising=False)


def _batch_in(tmp_path: Path, url: str) -> None:
    """The four-outcome batch, recorded in the store ``url``."""
    suite = write_suite(tmp_path, ["ok", "overflow", "blocked", "quota"], scenarios=FOUR_OUTCOMES)
    result = invoke("batch", suite, "--state-dir", tmp_path / "runner", "--store", url)
    assert result.exit_code == 4, result.output
    assert not (tmp_path / "runner" / "state.sqlite").exists()


def _get(server: MetricsServer, path: str) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=WAIT_S)
    try:
        conn.request("GET", path)
        reply = conn.getresponse()
        return reply.status, reply.read().decode()
    finally:
        conn.close()


def _url(location: StoreLocation) -> str:
    assert location.url is not None
    return location.url


def test_the_server_reads_a_batch_recorded_in_redis(
    tmp_path: Path, redis_location: StoreLocation
) -> None:
    _batch_in(tmp_path, _url(redis_location))
    with MetricsServer(tmp_path / "elsewhere", location=redis_location) as server:
        status, body = _get(server, "/metrics")
        assert status == 200
        assert 'backstay_tasks{state="failed"} 2' in body
        assert 'backstay_tasks{state="succeeded"} 1' in body
        status, body = _get(server, "/readyz")
    report: dict[str, Any] = json.loads(body)
    assert (status, report["status"]) == (200, "warn")
    (store,) = report["checks"]["store:reachable"]
    assert (store["status"], store["componentId"]) == ("pass", redis_location.display)
    assert report["checks"]["escalations:open"][0]["observedValue"] == 2
    assert not (tmp_path / "elsewhere" / "state.sqlite").exists()


def test_a_namespace_without_a_batch_is_refused_unless_one_is_starting(
    tmp_path: Path, redis_location: StoreLocation
) -> None:
    with pytest.raises(ConfigError, match="holds no batch"):
        MetricsServer(tmp_path, location=redis_location)
    with MetricsServer(tmp_path, location=redis_location, require_batch=False) as server:
        status, body = _get(server, "/metrics")
    assert status == 200
    assert 'backstay_tasks{state="running"} 0' in body


def test_readyz_fails_at_once_when_redis_stops_answering(tmp_path: Path) -> None:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (scripts/install-test-deps installs it)")
    redis = start_redis()
    try:
        url = f"{redis.url}?namespace=outage"
        _batch_in(tmp_path, url)
        # A batch waits for its store to come back; a scrape must answer all the same.
        location = dataclasses.replace(parse_store(url), unavailable=StoreUnavailable.WAIT)
        with MetricsServer(tmp_path / "elsewhere", location=location) as server:
            assert _get(server, "/readyz")[0] == 200
            redis.stop()
            status, body = _get(server, "/readyz")
            assert status == 503
            report = json.loads(body)
            assert report["status"] == "fail"
            (store,) = report["checks"]["store:reachable"]
            assert store["status"] == "fail"
            assert f"127.0.0.1:{redis.port}" in store["componentId"]
            assert _get(server, "/metrics")[0] == 500
            assert _get(server, "/healthz")[0] == 200
    finally:
        redis.stop()
