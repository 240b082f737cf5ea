"""`backstay agents install | list`: exit codes, what they print, no traceback, no leftovers."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.adapters.support import alive
from tests.agents.support import managed
from tests.cli.support import invoke

from backstay.agents import CLIS, agents_dir
from backstay.agents.install import current_install
from backstay.agents.version import forget_versions


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    forget_versions()


@pytest.fixture
def unreachable_npm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """npm pointed at a closed port on this machine, without retries."""
    monkeypatch.setenv("npm_config_registry", "http://127.0.0.1:9/")
    monkeypatch.setenv("npm_config_fetch_retries", "0")
    monkeypatch.setenv("npm_config_cache", str(tmp_path / "npm-cache"))


def test_install_that_fails_exits_3_naming_the_cli_the_command_and_the_fix(
    tmp_path: Path, unreachable_npm: None
) -> None:
    result = invoke("agents", "install", "codex", "--dir", tmp_path / "agents")
    assert result.exit_code == 3, result.output
    assert "codex: failed" in result.stderr
    assert "npm install --prefix" in result.stderr
    assert "@openai/codex@0.169.0" in result.stderr
    assert "backstay agents install codex" in result.stderr
    assert "0 of 1 agent CLIs installed" in result.stderr
    assert "Traceback" not in result.output


def test_install_json_reports_each_result(tmp_path: Path, unreachable_npm: None) -> None:
    result = invoke("agents", "install", "opencode", "--dir", tmp_path / "agents", "--json")
    assert result.exit_code == 3
    data = json.loads(result.stdout)
    assert data["dir"] == str(tmp_path / "agents")
    [item] = data["results"]
    assert (item["name"], item["status"], item["version"]) == ("opencode", "failed", "1.18.33")
    assert "npm registry is reachable" in item["problem"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["cursor"], "error: NAME: unknown agent CLI 'cursor'"),
        (["codex", "codex"], "error: NAME: names a CLI twice"),
    ],
)
def test_install_with_bad_names_exits_2(args: list[str], message: str, tmp_path: Path) -> None:
    result = invoke("agents", "install", *args, "--dir", tmp_path)
    assert result.exit_code == 2
    assert result.stderr.startswith(message)


def test_a_dir_that_is_a_file_exits_2(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    for command in (["install", "codex"], ["list"]):
        result = invoke("agents", *command, "--dir", tmp_path / "file")
        assert result.exit_code == 2
        assert "error: --dir: " in result.stderr
        assert "is not a directory" in result.stderr


def test_install_of_what_is_installed_exits_0_at_once() -> None:
    root = agents_dir()
    missing = [spec.name for spec in CLIS.values() if current_install(spec, root)[0] is None]
    if missing:
        pytest.skip(f"not installed in {root}: {', '.join(missing)} (run `make agents`)")
    result = invoke("agents", "install")
    assert result.exit_code == 0, result.output
    assert result.stderr.count("already installed") == len(CLIS)
    assert f"5 of 5 agent CLIs installed in {root}" in result.stderr


def test_list_json_shows_every_cli_and_where_it_was_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    root = tmp_path / "agents"
    binary = managed(root, CLIS["codex"], "0.169.0", prints="codex-cli 0.169.0")
    result = invoke("agents", "list", "--dir", root, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    by_name = {item["name"]: item for item in data["clis"]}
    assert list(by_name) == list(CLIS)
    codex = by_name["codex"]
    assert (codex["status"], codex["source"], codex["path"]) == ("ok", "managed", str(binary))
    assert codex["managed_version"] == codex["version"] == codex["pinned"] == "0.169.0"
    assert by_name["claude-code"]["status"] == "missing"


def test_list_table_says_how_to_install_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    result = invoke("agents", "list", "--dir", tmp_path)
    assert result.exit_code == 0
    assert "gemini-cli: missing" in result.stdout
    hint = f"run `backstay agents install gemini-cli --dir {tmp_path}`"
    assert hint in result.stdout.replace("\n", "")


def test_list_checks_a_configured_binary(tmp_path: Path) -> None:
    result = invoke(
        "agents", "list", "--dir", tmp_path, "--binary", f"aider={tmp_path / 'no'}", "--json"
    )
    assert result.exit_code == 0
    aider = next(item for item in json.loads(result.stdout)["clis"] if item["name"] == "aider")
    assert aider["status"] == "broken"
    assert "is not an executable file" in aider["notes"][0]


@pytest.mark.parametrize("item", ["aider", "aider=", "cursor=/bin/true"])
def test_list_with_a_bad_binary_option_exits_2(item: str, tmp_path: Path) -> None:
    result = invoke("agents", "list", "--dir", tmp_path, "--binary", item)
    assert result.exit_code == 2
    assert result.stderr.startswith("error: --binary: ")


@pytest.fixture
def silent_registry() -> Iterator[str]:
    """A registry on 127.0.0.1 that accepts connections and never answers."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        yield f"http://127.0.0.1:{server.getsockname()[1]}/"


def _carrying(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if marker.encode() in (entry / "environ").read_bytes() and alive(int(entry.name)):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_an_interrupted_install_exits_130_and_leaves_no_installer_running(
    tmp_path: Path, silent_registry: str
) -> None:
    mark = uuid.uuid4().hex
    marker = f"BACKSTAY_TEST_MARK={mark}"
    env = {
        **os.environ,
        "npm_config_registry": silent_registry,
        "npm_config_cache": str(tmp_path / "npm-cache"),
        "BACKSTAY_TEST_MARK": mark,
    }
    # Started as a terminal starts it, Ctrl-C live: a test run launched in the background
    # of a non-interactive shell inherits SIGINT ignored, and Python keeps it ignored.
    code = (
        "import signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
        "from backstay.cli import main; main()"
    )
    command = [sys.executable, "-c", code, "agents", "install", "codex", "opencode"]
    proc = subprocess.Popen(
        [*command, "--dir", str(tmp_path / "agents")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60  # npm starts slowly on a busy machine
        while len(_carrying(marker)) < 3 and time.monotonic() < deadline:
            time.sleep(0.1)  # backstay and its two npm installs have started
        assert len(_carrying(marker)) >= 3
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 130, err
    assert "interrupted" in err
    assert "Traceback" not in err
    deadline = time.monotonic() + 5
    while _carrying(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _carrying(marker) == []
