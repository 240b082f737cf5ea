"""``backstay health --json`` answered by the entry point without typer
(``cli._health_probe``): the same output and exit code as the command built by typer, for
every form it answers and for the errors it hands back to the command; every other form
goes to the command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.mounts import in_mount_namespace, needs_mounts
from tests.store.summary_support import fill, fill_redis

from backstay.cli import _health_probe
from backstay.cli._store_in_force import STATE_DIR_ENV_VAR
from backstay.store.location import StoreLocation
from backstay.store.sqlite.tasks import SQLiteTaskStore

# The entry point (the short path) and the typer application alone (the command).
ENTRY = "import sys; sys.argv[0] = 'backstay'; from backstay.cli import main; main()"
COMMAND = "import sys; sys.argv[0] = 'backstay'; from backstay.cli._app import main; main()"


def _run(
    code: str, args: list[str], cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.upper().startswith("BACKSTAY")}
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        cwd=cwd,
        env={**clean, **(env or {})},
    )


def _untimed(text: str) -> Any:
    """The JSON report with each check's time taken out (each run has its own)."""
    report = json.loads(text)
    for found in report["checks"].values():
        for check in found:
            check.pop("time", None)
    return report


def _both_alike(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> Any:
    """Run both paths; their exit codes, stderr and reports (untimed) are the same."""
    short, full = _run(ENTRY, args, cwd, env), _run(COMMAND, args, cwd, env)
    assert "Traceback" not in short.stderr + full.stderr
    assert (short.returncode, short.stderr) == (full.returncode, full.stderr)
    if not full.stdout.startswith("{"):  # no report, the table or the help: as printed
        assert short.stdout == full.stdout
        return None
    assert _untimed(short.stdout) == _untimed(full.stdout)
    assert short.stdout.count("\n") == full.stdout.count("\n")  # indented alike
    return _untimed(short.stdout)


@pytest.fixture
def batch(tmp_path: Path) -> Path:
    """A batch on SQLite in ``tmp_path/batch``: failed, paused, escalated and interrupted
    tasks among others."""
    with SQLiteTaskStore(tmp_path / "batch") as store:
        fill(store, tmp_path)
    return tmp_path


@pytest.mark.parametrize(
    "args",
    [
        ["--json", "--state-dir", "batch"],
        ["--state-dir=batch", "--json"],
        ["--state-dir", "elsewhere", "--store", "batch", "--json"],
        ["--json", "--store=batch", "--state-dir", "batch"],
    ],
    ids=["plain", "equals", "store-dir", "store-equals"],
)
def test_a_batch_reads_the_same_on_both_paths(batch: Path, args: list[str]) -> None:
    report = _both_alike(["health", *args], batch)
    assert report["status"] == "warn"
    assert report["checks"]["tasks:interrupted"][0]["observedValue"] == 2


def test_the_state_dir_from_the_environment_reads_the_same(batch: Path) -> None:
    report = _both_alike(["health", "--json"], batch, env={STATE_DIR_ENV_VAR: "batch"})
    assert report["checks"]["escalations:open"][0]["observedValue"] == 2


@pytest.mark.parametrize(
    "args",
    [
        ["--json", "--state-dir", "missing"],
        ["--json", "--state-dir", "empty"],
        ["--json", "--state-dir", "batch", "--store", "redis://127.0.0.1:1"],
        ["--json", "--state-dir", "batch", "--store", "ftp://nowhere"],
        ["--json", "--state-dir", "batch", "--set", "store=x"],
        ["--json"],
        ["--state-dir", "batch"],
        ["--json", "--state-dir", "batch", "--bogus"],
        ["--json", "--state-dir", "batch", "--state-dir", "batch"],
        ["--json", "--state-dir", ""],
        ["--json", "--state-dir"],
        ["--help"],
    ],
    ids=lambda args: " ".join(args) or "nothing",
)
def test_errors_and_other_forms_are_the_commands_own(batch: Path, args: list[str]) -> None:
    (batch / "empty").mkdir()
    _both_alike(["health", *args], batch)


def test_a_damaged_state_file_is_the_commands_error(batch: Path) -> None:
    (batch / "bad").mkdir()
    (batch / "bad" / "state.sqlite").write_bytes(b"not a database" * 100)
    _both_alike(["health", "--json", "--state-dir", "bad"], batch)


def test_a_batch_in_redis_reads_the_same_on_both_paths(
    tmp_path: Path, redis_location: StoreLocation
) -> None:
    fill_redis(redis_location, tmp_path)
    args = ["health", "--json", "--state-dir", "batch", "--store", str(redis_location.url)]
    report = _both_alike(args, tmp_path)
    assert report["checks"]["store:reachable"][0]["status"] == "pass"


@needs_mounts
@pytest.mark.parametrize("mounted", ["batch/state.sqlite", "batch"], ids=["file", "directory"])
def test_a_read_only_state_file_reads_the_same_on_both_paths(batch: Path, mounted: str) -> None:
    script = f"""
        mount --bind {mounted} {mounted} && mount -o remount,bind,ro {mounted} || exit 99
        {sys.executable} -c "{ENTRY}" health --json --state-dir batch >short.out 2>short.err
        echo "short=$?"
        {sys.executable} -c "{COMMAND}" health --json --state-dir batch >full.out 2>full.err
        echo "full=$?"
    """
    output = in_mount_namespace(script, batch)
    codes = dict(line.split("=") for line in output.splitlines() if "=" in line)
    assert codes["short"] == codes["full"], output
    assert (batch / "short.err").read_text() == (batch / "full.err").read_text()
    # SQLite cannot open it (no -wal file to read it by): the command's fault, exit 7. The
    # report that fails (exit 1) with a -wal file left by a killed batch is written by this
    # short path in tests/cli/test_faults.py (its scripts call backstay.cli.main).
    assert codes["short"] == "7"
    assert (batch / "short.out").read_text() == (batch / "full.out").read_text() == ""


def _written_to(code: str, cwd: Path, where: str, *, unbuffered: bool) -> tuple[int, str]:
    """Exit code and stderr of ``health --json`` whose output goes to a full device or to a
    pipe whose reader is gone."""
    clean = {k: v for k, v in os.environ.items() if not k.upper().startswith("BACKSTAY")}
    clean.pop("PYTHONUNBUFFERED", None)
    env = {**clean, **({"PYTHONUNBUFFERED": "1"} if unbuffered else {})}
    args = [sys.executable, "-c", code, "health", "--json", "--state-dir", "batch"]
    if where == "full":
        with open("/dev/full", "w") as out:
            done = subprocess.run(args, stdout=out, stderr=subprocess.PIPE, text=True,
                                  cwd=cwd, env=env, timeout=60, check=False)  # fmt: skip
        return done.returncode, done.stderr
    read, write = os.pipe()
    os.close(read)  # the reader is gone before anything is written
    try:
        done = subprocess.run(args, stdout=write, stderr=subprocess.PIPE, text=True,
                              cwd=cwd, env=env, timeout=60, check=False)  # fmt: skip
    finally:
        os.close(write)
    return done.returncode, done.stderr


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("where", ["full", "gone"])
@pytest.mark.parametrize("unbuffered", [True, False], ids=["unbuffered", "buffered"])
def test_output_that_cannot_be_written_ends_alike(
    batch: Path, where: str, unbuffered: bool
) -> None:
    short = _written_to(ENTRY, batch, where, unbuffered=unbuffered)
    assert short == _written_to(COMMAND, batch, where, unbuffered=unbuffered)
    assert short[0] != 0
    assert "Traceback" not in short[1]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--json", "--state-dir", "d"], (Path("d"), None)),
        (["--state-dir=d", "--json", "--store", "redis://h/0"], (Path("d"), "redis://h/0")),
        (["--json", "--state-dir", "d", "--store=a=b"], (Path("d"), "a=b")),
        (["--state-dir", "d"], None),  # the table: the command's
        (["--json", "--json", "--state-dir", "d"], None),
        (["--json", "--state-dir", "-d"], None),
        (["--json", "--state-dir=", "--store", "s"], None),
        (["--json", "--state-dir", "d", "--set", "a=b"], None),
        (["--json", "--state-dir", "d", "--json=yes"], None),
        (["--json", "--state-dir", "d", "--"], None),
        (["--json", "--state-dir", "d", "-h"], None),
    ],
)
def test_only_plain_flags_are_read_here(
    args: list[str], expected: tuple[Path, str | None] | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(STATE_DIR_ENV_VAR, raising=False)
    assert _health_probe._plain_flags(args) == expected


def test_shell_completion_is_typers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("_BACKSTAY_COMPLETE", "complete_bash")
    assert _health_probe._plain_flags(["--json", "--state-dir", "d"]) is None


def test_an_empty_state_dir_variable_is_not_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(STATE_DIR_ENV_VAR, "")
    assert _health_probe._plain_flags(["--json"]) is None
    monkeypatch.setenv(STATE_DIR_ENV_VAR, "d")
    assert _health_probe._plain_flags(["--json"]) == (Path("d"), None)
