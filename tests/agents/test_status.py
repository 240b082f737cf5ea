"""cli_status: ok, missing, unsupported, broken, as `backstay agents list` shows them."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.agents.support import managed, program

from backstay.agents import CliState, Source, cli_spec, cli_status
from backstay.agents.install import binary_in
from backstay.agents.version import forget_versions

GEMINI = cli_spec("gemini-cli")


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    forget_versions()


@pytest.fixture
def bin_dir(tmp_path: Path) -> Path:
    path = tmp_path / "bin"
    path.mkdir()
    return path


@pytest.fixture
def env(bin_dir: Path) -> dict[str, str]:
    return {"PATH": f"{bin_dir}:/usr/bin:/bin"}


def test_a_managed_install_at_the_pin_is_ok(tmp_path: Path, env: dict[str, str]) -> None:
    managed(tmp_path, GEMINI, "0.61.0")
    status = cli_status(GEMINI, root=tmp_path, environ=env)
    assert status.state is CliState.OK
    assert status.managed_version == "0.61.0"
    assert status.located is not None
    assert status.located.source is Source.MANAGED
    data = status.to_dict()
    assert data["status"] == "ok"
    assert data["source"] == "managed"
    assert data["supported"] == ["0.61.0"]


def test_nothing_anywhere_is_missing(tmp_path: Path, env: dict[str, str]) -> None:
    status = cli_status(GEMINI, root=tmp_path, environ=env)
    assert status.state is CliState.MISSING
    assert status.located is None
    assert status.to_dict()["version"] is None


def test_only_an_unknown_version_is_unsupported(
    tmp_path: Path, bin_dir: Path, env: dict[str, str]
) -> None:
    program(bin_dir / "gemini", "0.50.0")
    status = cli_status(GEMINI, root=tmp_path, environ=env)
    assert status.state is CliState.UNSUPPORTED
    assert status.located is not None
    assert status.located.version == "0.50.0"


def test_an_unfinished_install_is_broken(tmp_path: Path, env: dict[str, str]) -> None:
    program(binary_in(GEMINI, tmp_path / "gemini-cli"), "0.61.0")
    status = cli_status(GEMINI, root=tmp_path, environ=env)
    assert status.state is CliState.BROKEN
    assert any("unfinished or failed install" in note for note in status.notes)


def test_a_configured_path_that_does_not_run_is_broken(tmp_path: Path, env: dict[str, str]) -> None:
    bad = program(tmp_path / "gemini", "crash", code=1)
    status = cli_status(GEMINI, root=tmp_path, configured_path=bad, environ=env)
    assert status.state is CliState.BROKEN
    assert status.notes[0].startswith("configured: ")


def test_a_configured_path_at_the_pin_is_ok(tmp_path: Path, env: dict[str, str]) -> None:
    mine = program(tmp_path / "gemini", "0.61.0")
    status = cli_status(GEMINI, root=tmp_path, configured_path=mine, environ=env)
    assert status.state is CliState.OK
    assert status.located is not None
    assert status.located.source is Source.CONFIGURED
