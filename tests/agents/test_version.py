"""detect_version: `<binary> --version` in a throw-away HOME, remembered per binary."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from tests.agents.support import program, runs_of

from backstay.agents import cli_spec, detect_version
from backstay.agents.version import forget_versions
from backstay.errors import ConfigError

CODEX = cli_spec("codex")
CANARY = "sk-proj-CanaryCanaryCanary0123456789"


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    forget_versions()


def test_the_version_is_read_from_the_output(tmp_path: Path) -> None:
    binary = program(tmp_path / "codex", "codex-cli 0.169.0")
    assert detect_version(binary, CODEX) == "0.169.0"


def test_a_binary_is_probed_once_while_it_is_unchanged(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    binary = program(tmp_path / "codex", "codex-cli 0.169.0", runs=runs)
    detect_version(binary, CODEX)
    detect_version(binary, CODEX)
    assert runs_of(runs) == 1


def test_a_changed_binary_is_probed_again(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    binary = program(tmp_path / "codex", "codex-cli 0.169.0", runs=runs)
    detect_version(binary, CODEX)
    program(binary, "codex-cli 0.170.0 (a longer line)", runs=runs)
    assert detect_version(binary, CODEX) == "0.170.0"
    assert runs_of(runs) == 2


def test_the_probe_runs_in_a_throwaway_home(tmp_path: Path) -> None:
    marker = tmp_path / "home-seen"
    binary = tmp_path / "codex"
    binary.write_text(f'#!/bin/sh\necho "$HOME" > {marker}\necho codex-cli 0.169.0\n')
    binary.chmod(0o755)
    detect_version(binary, CODEX, environ={"PATH": os.defpath, "HOME": "/root/real"})
    home = marker.read_text().strip()
    assert re.search(r"backstay-version-", home)
    assert not Path(home).exists()


def test_a_failing_binary_is_a_config_error_quoting_it_redacted(tmp_path: Path) -> None:
    binary = program(tmp_path / "codex", f"bad key {CANARY}", code=3)
    with pytest.raises(ConfigError) as caught:
        detect_version(binary, CODEX)
    assert caught.value.where == "codex"
    assert "exited 3 without a version" in str(caught.value)
    assert CANARY not in str(caught.value)


def test_output_without_a_version_is_a_config_error(tmp_path: Path) -> None:
    binary = program(tmp_path / "codex", "usage: codex [options]")
    with pytest.raises(ConfigError, match="without a version"):
        detect_version(binary, CODEX)


def test_a_hanging_binary_is_killed_at_the_timeout(tmp_path: Path) -> None:
    binary = tmp_path / "codex"
    binary.write_text("#!/bin/sh\nsleep 30\n")
    binary.chmod(0o755)
    with pytest.raises(ConfigError, match=r"did not finish within 0\.5 s"):
        detect_version(binary, CODEX, timeout_s=0.5)


def test_a_missing_binary_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot be read"):
        detect_version(tmp_path / "nothing", CODEX)


def test_a_file_that_cannot_run_is_a_config_error(tmp_path: Path) -> None:
    binary = tmp_path / "codex"
    binary.write_text("not a program")
    with pytest.raises(ConfigError, match="cannot be run"):
        detect_version(binary, CODEX)
