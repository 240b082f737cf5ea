"""``backstay serve`` and ``backstay health``: metrics and health of a state directory
(or of a batch in Redis) over HTTP, and the same check printed; ``batch --serve-port``
while the batch runs; the bearer token and the refusal to serve beyond loopback without
one."""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest
from tests.cli.support import FOUR_OUTCOMES, invoke, write_suite
from tests.observe.support import BACKSTAY, LIMIT_S, finished_batch, serving

from backstay.observe.server import TOKEN_ENV_VAR
from backstay.store.location import STORE_ENV_VAR, StoreLocation

TOKEN: Final = "canary-serve-token-90d1"


@pytest.fixture(autouse=True)
def _no_stray_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(STORE_ENV_VAR, raising=False)
    monkeypatch.delenv(TOKEN_ENV_VAR, raising=False)
    monkeypatch.delenv("BACKSTAY_CONFIG", raising=False)


def _get(url: str, token: str | None = None) -> tuple[int, str, str]:
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    request = urllib.request.Request(url, headers=headers)  # noqa: S310 - loopback
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:  # noqa: S310 - loopback
            return reply.status, reply.headers["Content-Type"], reply.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.headers["Content-Type"], err.read().decode()


@contextlib.contextmanager
def _started(args: list[str]) -> Iterator[tuple[str, list[str]]]:
    """``backstay ARGS`` running: the loopback URL of its server and the lines it wrote to
    stderr so far; when the block ends, it is stopped by PID and the list gets the rest."""
    proc = subprocess.Popen([*BACKSTAY, *args], stderr=subprocess.PIPE, text=True)
    watchdog = threading.Timer(LIMIT_S, proc.kill)
    watchdog.start()
    lines: list[str] = []
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            found = re.search(r"http://[0-9.]+:(\d+)/metrics", line)
            if found:
                yield f"http://127.0.0.1:{found.group(1)}", lines
                return
        pytest.fail(f"backstay {args} never said where it serves: {lines}")
    finally:
        watchdog.cancel()
        proc.terminate()
        try:  # the bound every serve test gives a stop (a loaded machine is slow to stop)
            proc.wait(timeout=LIMIT_S)
        finally:
            if proc.poll() is None:  # never left running into another test
                proc.kill()
                proc.wait()
        if proc.stderr is not None:
            lines.extend(proc.stderr)
            proc.stderr.close()


def _redis_batch(tmp_path: Path, store: str | None) -> None:
    """The four-outcome batch recorded in Redis (``store``, else ``$BACKSTAY_STORE``)."""
    suite = write_suite(tmp_path, ["ok", "overflow", "blocked", "quota"], scenarios=FOUR_OUTCOMES)
    where = [] if store is None else ["--store", store]
    result = invoke("batch", suite, "--state-dir", tmp_path / "runner", *where)
    assert result.exit_code == 4, result.output
    assert not (tmp_path / "runner" / "state.sqlite").exists()


def _url(location: StoreLocation) -> str:
    assert location.url is not None
    return location.url


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
    assert 'backstay_tasks{state="failed"} 2' in body


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
    slow: list[list[dict[str, Any]]] = [
        [{"sleep": 3.0}, {"result": "done", "input_tokens": 1, "output_tokens": 1}]
    ]
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


def test_batch_on_a_redis_store_serves_metrics_while_it_runs(
    tmp_path: Path, redis_location: StoreLocation
) -> None:
    slow: list[list[dict[str, Any]]] = [
        [{"sleep": 3.0}, {"result": "done", "input_tokens": 1, "output_tokens": 1}]
    ]
    suite = write_suite(tmp_path, ["slow"], scenario=slow)
    state = tmp_path / "state"
    args = ["batch", str(suite), "--state-dir", str(state), "--serve-port", "0"]
    for proc, url in serving([*args, "--store", _url(redis_location)]):
        deadline = time.monotonic() + 20
        body = ""
        while 'backstay_tasks{state="running"} 1' not in body and time.monotonic() < deadline:
            body = _get(url + "/metrics")[2]
            time.sleep(0.1)
        assert 'agent_active_sessions{framework="mock"} 1' in body
        ready = json.loads(_get(url + "/readyz")[2])
        assert ready["checks"]["store:reachable"][0]["status"] == "pass"
        assert proc.wait(timeout=LIMIT_S) == 0
    assert not (state / "state.sqlite").exists()


def test_serve_reads_a_batch_recorded_in_redis(
    tmp_path: Path, redis_location: StoreLocation
) -> None:
    _redis_batch(tmp_path, _url(redis_location))
    args = ["serve", "--state-dir", str(tmp_path / "other"), "--port", "0"]
    with _started([*args, "--store", _url(redis_location)]) as (url, lines):
        status, _, body = _get(url + "/metrics")
        assert status == 200
        assert 'backstay_tasks{state="failed"} 2' in body
    assert redis_location.display in "".join(lines)


def test_serve_takes_the_store_from_the_environment(
    tmp_path: Path, redis_location: StoreLocation, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(STORE_ENV_VAR, _url(redis_location))
    _redis_batch(tmp_path, None)
    for _, url in serving(["serve", "--state-dir", str(tmp_path / "other"), "--port", "0"]):
        assert 'backstay_tasks{state="failed"} 2' in _get(url + "/metrics")[2]


def test_serve_on_a_redis_namespace_without_a_batch_exits_2(
    tmp_path: Path, redis_location: StoreLocation
) -> None:
    result = invoke("serve", "--state-dir", tmp_path, "--store", _url(redis_location))
    assert result.exit_code == 2
    assert "holds no batch" in result.output
    assert "Traceback" not in result.output


def test_serve_beyond_loopback_without_a_token_exits_2(state: Path) -> None:
    result = invoke("serve", "--state-dir", state, "--host", "0.0.0.0", "--port", "0")  # noqa: S104
    assert result.exit_code == 2
    assert "--allow-unauthenticated" in result.output
    assert "Traceback" not in result.output


def test_serve_beyond_loopback_when_allowed_warns(state: Path) -> None:
    args = ["serve", "--state-dir", str(state), "--host", "0.0.0.0", "--port", "0"]  # noqa: S104
    with _started([*args, "--allow-unauthenticated"]) as (url, lines):
        assert _get(url + "/healthz")[0] == 200
    warning = "warning: serving on 0.0.0.0 without authentication"
    assert any(line.startswith(warning) for line in lines), lines


@pytest.mark.parametrize("given", ["environment", "--token-env"])
def test_serve_with_a_token_answers_only_requests_that_carry_it(
    state: Path, given: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    args = ["serve", "--state-dir", str(state), "--port", "0"]
    if given == "environment":
        monkeypatch.setenv(TOKEN_ENV_VAR, TOKEN)
    else:
        monkeypatch.setenv("MY_SCRAPE_TOKEN", TOKEN)
        args += ["--token-env", "MY_SCRAPE_TOKEN"]
    with _started(args) as (url, lines):
        assert _get(url + "/metrics")[0] == 401
        assert _get(url + "/metrics", token="wrong")[0] == 401
        assert _get(url + "/metrics", token=TOKEN)[0] == 200
    assert "bearer token required" in "".join(lines)
    assert TOKEN not in "".join(lines)


def test_a_token_allows_serving_beyond_loopback(
    state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_ENV_VAR, TOKEN)
    args = ["serve", "--state-dir", str(state), "--host", "0.0.0.0", "--port", "0"]  # noqa: S104
    with _started(args) as (url, lines):
        assert _get(url + "/readyz")[0] == 401
        assert _get(url + "/readyz", token=TOKEN)[0] == 200
    assert not any(line.startswith("warning") for line in lines)


def test_token_env_naming_an_unset_variable_exits_2(
    state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NO_SUCH_TOKEN_VAR", raising=False)
    result = invoke("serve", "--state-dir", state, "--token-env", "NO_SUCH_TOKEN_VAR")
    assert result.exit_code == 2
    assert "$NO_SUCH_TOKEN_VAR is not set" in result.output
    assert "Traceback" not in result.output


def test_batch_serve_port_requires_the_token_of_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_ENV_VAR, TOKEN)
    slow: list[list[dict[str, Any]]] = [
        [{"sleep": 2.0}, {"result": "done", "input_tokens": 1, "output_tokens": 1}]
    ]
    suite = write_suite(tmp_path, ["slow"], scenario=slow)
    args = ["batch", str(suite), "--state-dir", str(tmp_path / "state"), "--serve-port", "0"]
    for proc, url in serving(args):
        assert _get(url + "/metrics")[0] == 401
        assert _get(url + "/metrics", token=TOKEN)[0] == 200
        assert proc.wait(timeout=LIMIT_S) == 0
