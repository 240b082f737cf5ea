"""Without the ray extra, the Ray executor is a clear error naming it, before anything is
recorded; the local executor stays the default and never needs Ray."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest
from tests.cli.support import invoke, write_suite

from backstay.errors import ConfigError
from backstay.executors import RAY_EXTRA_HINT
from backstay.executors._ray_cluster import import_ray, require_ray


@pytest.fixture
def no_ray(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError


@pytest.fixture(autouse=True)
def _here(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BACKSTAY_CONFIG", raising=False)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)


@pytest.mark.usefixtures("no_ray")
def test_importing_ray_without_the_extra_names_it() -> None:
    with pytest.raises(ConfigError, match=r"pip install 'backstay\[ray\]'"):
        import_ray()


@pytest.mark.usefixtures("no_ray")
def test_checking_for_ray_without_the_extra_names_it() -> None:
    with pytest.raises(ConfigError, match=r"pip install 'backstay\[ray\]'"):
        require_ray()


@pytest.mark.usefixtures("no_ray")
def test_a_ray_batch_without_the_extra_exits_2_naming_it_and_runs_nothing(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, ["a"])
    result = invoke("batch", suite, "--state-dir", "state", "--executor", "ray")
    assert result.exit_code == 2, result.output
    assert RAY_EXTRA_HINT in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "state").exists()  # nothing was recorded, nothing ran


@pytest.mark.usefixtures("no_ray")
def test_the_local_executor_is_the_default_and_needs_no_ray(tmp_path: Path) -> None:
    result = invoke("batch", write_suite(tmp_path, ["a", "b"]), "--state-dir", "state")
    assert result.exit_code == 0, result.output


def test_a_ray_address_without_the_ray_executor_exits_2(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, ["a"])
    result = invoke("batch", suite, "--state-dir", "state", "--ray-address", "127.0.0.1:1")
    assert result.exit_code == 2, result.output
    assert "--ray-address: is only used with --executor ray" in result.output


def test_a_ray_address_nobody_answers_exits_2_naming_it(tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port bound but never listening: refused
        sock.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{sock.getsockname()[1]}"
        suite = write_suite(tmp_path, ["a"])
        result = invoke(
            "batch", suite, "--state-dir", "state", "--executor", "ray", "--ray-address", address
        )
    assert result.exit_code == 2, result.output
    assert f"--ray-address: cannot reach the Ray cluster at {address}" in result.output
    assert "Traceback" not in result.output
