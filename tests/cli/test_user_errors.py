"""Every user error of every command, through the real command line: exit code 2, one
message naming what is wrong and where, never a traceback, and nothing already recorded
lost (every file that was there before is there after, byte for byte).

Each case builds its inputs in a fresh folder (the working directory) and runs one
command there. ``fake-provider serve`` runs as a
process (a case it wrongly accepted would serve until killed); the rest run in-process.
"""

from __future__ import annotations

import dataclasses
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final

import pytest
import yaml
from tests.cli.support import invoke, write_suite

from backstay.engine import Engine
from backstay.store import STATE_FILE

BAD_YAML: Final = "tasks: [unclosed\n  - oops: {\n"
NOT_UTF8: Final = b"suite: \xff\xfe broken\n"


def _nothing(tmp: Path) -> None:
    """No inputs: the case names things that do not exist."""


def _write(name: str, text: str | bytes) -> Callable[[Path], None]:
    def setup(tmp: Path) -> None:
        path = tmp / name
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")

    return setup


def _folder(name: str) -> Callable[[Path], None]:
    return lambda tmp: (tmp / name).mkdir()


def _suite(**changes: Any) -> Callable[[Path], None]:
    """A good suite run by the mock agent (suite.yaml), with ``changes`` to its parts:
    ``top`` (top-level keys), ``task`` (the one task's keys; ``None`` removes one),
    ``mock`` (its settings)."""

    def setup(tmp: Path) -> None:
        path = write_suite(tmp, ["t"])
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        task = {**data["tasks"][0], **changes.get("task", {})}
        data["tasks"][0] = {key: value for key, value in task.items() if value is not None}
        data["adapters"]["mock"].update(changes.get("mock", {}))
        data.update(changes.get("top", {}))
        path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")

    return setup


def _state(tmp: Path) -> None:
    """A real state directory (``state``) holding an empty batch."""
    with Engine(tmp / "state"):
        pass


def _corrupt_state(tmp: Path) -> None:
    (tmp / "state").mkdir()
    (tmp / "state" / STATE_FILE).write_bytes(b"this is not a database\n" * 200)


def _foreign_sqlite(tmp: Path) -> None:
    """A SQLite file in the state file's place that some other program made."""
    (tmp / "state").mkdir()
    with sqlite3.connect(tmp / "state" / STATE_FILE) as conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
        conn.execute("INSERT INTO notes VALUES ('keep me')")
    conn.close()


def _run_inputs(tmp: Path, prompt: str | bytes = "solve it") -> None:
    _write("prompt.md", prompt)(tmp)
    (tmp / "ws").mkdir()
    _write("scenario.yaml", "attempts: [[{result: done}]]\n")(tmp)


def _run_setup(*extra: Callable[[Path], None], prompt: str | bytes = "solve it") -> Any:
    def setup(tmp: Path) -> None:
        _run_inputs(tmp, prompt)
        for step in extra:
            step(tmp)

    return setup


RUN: Final = (
    "run",
    "--adapter",
    "mock",
    "--model",
    "m",
    "--prompt-file",
    "prompt.md",
    "--workspace",
    "ws",
    "--output-dir",
    "out",
    "--adapter-option",
    "scenario=scenario.yaml",
)


def _with(args: tuple[str, ...], flag: str, value: str) -> tuple[str, ...]:
    """``args`` with ``flag``'s value replaced."""
    at = args.index(flag) + 1
    return (*args[:at], value, *args[at + 1 :])


@dataclasses.dataclass(frozen=True, slots=True)
class Case:
    id: str
    args: tuple[str, ...]
    names: tuple[str, ...]
    setup: Callable[[Path], None] = _nothing
    locked: bool = False
    process: bool = False


STATE: Final = ("--state-dir", "state")
ENGINE_COMMANDS: Final = {
    "resume": ("resume", *STATE),
    "status": ("status", *STATE),
    "escalations-list": ("escalations", "list", *STATE),
    "escalations-show": ("escalations", "show", "1", *STATE),
    "escalations-resolve": ("escalations", "resolve", "1", "--action", "retry", *STATE),
}
SUITE_COMMANDS: Final = {
    "batch": ("batch", "suite.yaml", *STATE),
    "suite-check": ("suite", "check", "suite.yaml"),
}

CASES: Final[list[Case]] = [
    # backstay run
    Case(
        "run-missing-prompt",
        _with(RUN, "--prompt-file", "nope.md"),
        ("--prompt-file", "nope.md"),
        _run_setup(),
    ),
    Case(
        "run-prompt-is-a-folder",
        _with(RUN, "--prompt-file", "ws"),
        ("--prompt-file", "ws"),
        _run_setup(),
    ),
    Case("run-empty-prompt", RUN, ("--prompt-file", "empty"), _run_setup(prompt="")),
    Case("run-blank-prompt", RUN, ("--prompt-file", "empty"), _run_setup(prompt=" \n\t\n")),
    Case(
        "run-prompt-not-utf8", RUN, ("--prompt-file", "UTF-8"), _run_setup(prompt=b"\xff\xfe\xfa")
    ),
    Case(
        "run-missing-workspace",
        _with(RUN, "--workspace", "nowhere"),
        ("--workspace", "nowhere"),
        _run_setup(),
    ),
    Case(
        "run-output-dir-is-a-file",
        _with(RUN, "--output-dir", "prompt.md"),
        ("--output-dir", "prompt.md"),
        _run_setup(),
    ),
    Case("run-unknown-adapter", _with(RUN, "--adapter", "mok"), ("--adapter", "mok"), _run_setup()),
    Case(
        "run-unknown-adapter-setting",
        (*RUN, "--adapter-option", "colour=red"),
        ("--adapter-option", "colour"),
        _run_setup(),
    ),
    Case(
        "run-malformed-adapter-option",
        (*RUN, "--adapter-option", "stall=[1,"),
        ("--adapter-option",),
        _run_setup(),
    ),
    Case(
        "run-missing-scenario-file",
        _with(RUN, "--adapter-option", "scenario=gone.yaml"),
        ("scenario", "gone.yaml"),
        _run_setup(),
    ),
    Case(
        "run-malformed-scenario-file",
        RUN,
        ("scenario.yaml",),
        _run_setup(_write("scenario.yaml", BAD_YAML)),
    ),
    Case("run-malformed-policy", (*RUN, "--policy", "{extends: [x"), ("--policy",), _run_setup()),
    Case(
        "run-unknown-policy", (*RUN, "--policy", "standrd"), ("--policy", "standrd"), _run_setup()
    ),
    Case("run-missing-config", (*RUN, "--config", "nope.yaml"), ("nope.yaml",), _run_setup()),
    Case(
        "run-malformed-config-here",
        RUN,
        ("backstay.yaml",),
        _run_setup(_write("backstay.yaml", BAD_YAML)),
    ),
    Case(
        "run-config-unknown-key",
        RUN,
        ("backstay.yaml", "retyr"),
        _run_setup(_write("backstay.yaml", "retyr: {}\n")),
    ),
    Case(
        "run-workspace-is-a-file",
        _with(RUN, "--workspace", "prompt.md"),
        ("--workspace", "prompt.md"),
        _run_setup(),
    ),
    Case(
        "run-api-setting-wrong-type",
        (*_with(RUN[:-2], "--adapter", "anthropic-api"), "--adapter-option", "max_tokens=lots"),
        ("--adapter-option", "max_tokens"),
        _run_setup(),
    ),
    Case("run-negative-timeout", (*RUN, "--timeout", "-1"), ("--timeout",), _run_setup()),
    Case(
        "run-no-retry-and-policy",
        (*RUN, "--no-retry", "--policy", "standard"),
        ("--policy", "--no-retry"),
        _run_setup(),
    ),
    # suites: batch and suite check alike
    *[
        case
        for command, args in SUITE_COMMANDS.items()
        for case in (
            Case(f"{command}-missing-suite", args, ("suite.yaml",)),
            Case(f"{command}-suite-is-a-folder", args, ("suite.yaml",), _folder("suite.yaml")),
            Case(
                f"{command}-suite-not-utf8",
                args,
                ("suite.yaml", "UTF-8"),
                _write("suite.yaml", NOT_UTF8),
            ),
            Case(
                f"{command}-malformed-suite", args, ("suite.yaml",), _write("suite.yaml", BAD_YAML)
            ),
            Case(f"{command}-empty-suite", args, ("suite.yaml",), _write("suite.yaml", "")),
            Case(
                f"{command}-suite-wrong-type",
                args,
                ("suite.yaml", "tasks"),
                _suite(top={"tasks": 5}),
            ),
            Case(
                f"{command}-suite-unknown-key",
                args,
                ("suite.yaml", "taks"),
                _suite(top={"taks": []}),
            ),
            Case(
                f"{command}-unknown-adapter",
                args,
                ("suite.yaml", "mok"),
                _suite(task={"adapter": "mok"}),
            ),
            Case(
                f"{command}-unknown-adapter-setting",
                args,
                ("suite.yaml", "colour"),
                _suite(mock={"colour": "red"}),
            ),
            Case(
                f"{command}-empty-prompt",
                args,
                ("suite.yaml", "prompt"),
                _suite(task={"prompt": ""}),
            ),
            Case(
                f"{command}-missing-prompt-file",
                args,
                ("suite.yaml", "gone.md"),
                _suite(task={"prompt": None, "prompt_file": "gone.md"}),
            ),
            Case(
                f"{command}-empty-prompt-file",
                args,
                ("suite.yaml", "prompt_file", "empty"),
                lambda tmp: (
                    _write("p.md", " \n")(tmp),
                    _suite(task={"prompt": None, "prompt_file": "p.md"})(tmp),
                ),
            ),
            Case(
                f"{command}-missing-config",
                (*args, "--config", "nope.yaml"),
                ("nope.yaml",),
                _suite(),
            ),
        )
    ],
    Case(
        "batch-state-dir-is-a-file",
        SUITE_COMMANDS["batch"],
        ("--state-dir", "state"),
        lambda tmp: (_suite()(tmp), _write("state", "x")(tmp)),
    ),
    Case(
        "batch-corrupt-state",
        SUITE_COMMANDS["batch"],
        ("state.sqlite",),
        lambda tmp: (_suite()(tmp), _corrupt_state(tmp)),
    ),
    Case(
        "batch-locked-state",
        SUITE_COMMANDS["batch"],
        ("state.sqlite", "locked"),
        lambda tmp: (_suite()(tmp), _state(tmp)),
        locked=True,
    ),
    # the commands over an existing state directory
    *[
        case
        for command, args in ENGINE_COMMANDS.items()
        for case in (
            Case(f"{command}-missing-state-dir", args, ("--state-dir", "state", "does not exist")),
            Case(
                f"{command}-not-a-state-dir",
                args,
                ("--state-dir", "state", STATE_FILE),
                _folder("state"),
            ),
            Case(
                f"{command}-state-dir-is-a-file",
                args,
                ("--state-dir", "state"),
                _write("state", "x"),
            ),
            Case(
                f"{command}-corrupt-state", args, ("state.sqlite", "not a readable"), _corrupt_state
            ),
        )
    ],
    Case("status-foreign-sqlite", ENGINE_COMMANDS["status"], ("state.sqlite",), _foreign_sqlite),
    Case(
        "resume-missing-config",
        (*ENGINE_COMMANDS["resume"], "--config", "nope.yaml"),
        ("nope.yaml",),
        _state,
    ),
    Case(
        "batch-malformed-config-here",
        SUITE_COMMANDS["batch"],
        ("backstay.yaml",),
        lambda tmp: (_suite()(tmp), _write("backstay.yaml", BAD_YAML)(tmp)),
    ),
    Case(
        "suite-check-api-setting-wrong-type",
        SUITE_COMMANDS["suite-check"],
        ("suite.yaml", "temperature"),
        _suite(
            task={"adapter": "anthropic-api"},
            top={"adapters": {"anthropic-api": {"temperature": 9}}},
        ),
    ),
    Case(
        "status-locked-state",
        ENGINE_COMMANDS["status"],
        ("state.sqlite", "locked"),
        _state,
        locked=True,
    ),
    Case(
        "resume-locked-state",
        ENGINE_COMMANDS["resume"],
        ("state.sqlite", "locked"),
        _state,
        locked=True,
    ),
    Case(
        "escalations-show-unknown-id",
        ENGINE_COMMANDS["escalations-show"],
        ("escalation", "1"),
        _state,
    ),
    Case(
        "escalations-resolve-unknown-id",
        ENGINE_COMMANDS["escalations-resolve"],
        ("escalation", "1"),
        _state,
    ),
    Case(
        "escalations-resolve-bad-action",
        ("escalations", "resolve", "1", "--action", "ignore", *STATE),
        ("--action", "ignore"),
        _state,
    ),
    # backstay config
    Case("config-check-missing", ("config", "check", "backstay.yaml"), ("backstay.yaml",)),
    Case(
        "config-check-folder",
        ("config", "check", "backstay.yaml"),
        ("backstay.yaml",),
        _folder("backstay.yaml"),
    ),
    Case(
        "config-check-not-utf8",
        ("config", "check", "backstay.yaml"),
        ("backstay.yaml",),
        _write("backstay.yaml", NOT_UTF8),
    ),
    Case(
        "config-check-malformed",
        ("config", "check", "backstay.yaml"),
        ("backstay.yaml",),
        _write("backstay.yaml", BAD_YAML),
    ),
    Case(
        "config-check-unknown-key",
        ("config", "check", "backstay.yaml"),
        ("backstay.yaml", "retyr"),
        _write("backstay.yaml", "retyr: {}\n"),
    ),
    Case(
        "config-check-wrong-type",
        ("config", "check", "backstay.yaml"),
        ("backstay.yaml", "retry"),
        _write("backstay.yaml", "retry: 5\n"),
    ),
    Case("config-show-missing", ("config", "show", "--config", "nope.yaml"), ("nope.yaml",)),
    Case(
        "config-show-malformed-here",
        ("config", "show"),
        ("backstay.yaml",),
        _write("backstay.yaml", BAD_YAML),
    ),
    Case("config-show-bad-set", ("config", "show", "--set", "retry.nope=1"), ("--set", "nope")),
    # backstay explain
    Case("explain-nothing-to-explain", ("explain",), ("--status", "--exception")),
    Case(
        "explain-missing-body-file",
        ("explain", "--status", "500", "--body", "@gone.json"),
        ("--body", "gone.json"),
    ),
    Case(
        "explain-body-file-is-a-folder",
        ("explain", "--status", "500", "--body", "@ws"),
        ("--body", "ws"),
        _folder("ws"),
    ),
    Case(
        "explain-unknown-agent",
        ("explain", "--agent", "clippy", "--output", "x"),
        ("--agent", "clippy"),
    ),
    Case("explain-bad-exception", ("explain", "--exception", "1 bad"), ("--exception",)),
    # backstay demo --export
    Case(
        "demo-export-to-a-file",
        ("demo", "--export", "here"),
        ("--export", "here"),
        _write("here", "mine"),
    ),
    Case(
        "demo-export-over-files",
        ("demo", "--export", "here"),
        ("--export", "suite.yaml"),
        lambda tmp: (_folder("here")(tmp), _write("here/suite.yaml", "mine")(tmp)),
    ),
    Case(
        "demo-state-dir-not-empty",
        ("demo", "--state-dir", "here"),
        ("--state-dir", "here"),
        lambda tmp: (_folder("here")(tmp), _write("here/x", "mine")(tmp)),
    ),
    # backstay fake-provider serve
    Case(
        "fake-provider-missing-scenario",
        ("fake-provider", "serve", "--scenario", "gone.yaml"),
        ("gone.yaml",),
        process=True,
    ),
    Case(
        "fake-provider-malformed-scenario",
        ("fake-provider", "serve", "--scenario", "s.yaml"),
        ("s.yaml",),
        _write("s.yaml", BAD_YAML),
        process=True,
    ),
    Case(
        "fake-provider-scenario-unknown-key",
        ("fake-provider", "serve", "--scenario", "s.yaml"),
        ("s.yaml", "fautls"),
        _write("s.yaml", "fautls: []\n"),
        process=True,
    ),
    Case(
        "fake-provider-bad-fault",
        ("fake-provider", "serve", "--fault", "meteor"),
        ("--fault", "meteor"),
        process=True,
    ),
    Case(
        "fake-provider-bad-port",
        ("fake-provider", "serve", "--port", "70000"),
        ("--port", "70000"),
        process=True,
    ),
    # backstay agents
    Case("agents-install-unknown", ("agents", "install", "clippy", "--dir", "agents"), ("clippy",)),
    Case(
        "agents-list-bad-binary",
        ("agents", "list", "--binary", "clippy=/bin/true", "--dir", "agents"),
        ("--binary", "clippy"),
    ),
    Case(
        "agents-list-dir-is-a-file",
        ("agents", "list", "--dir", "agents"),
        ("--dir", "agents"),
        _write("agents", "x"),
    ),
]


@pytest.fixture(autouse=True)
def _here(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("BACKSTAY_CONFIG", "BACKSTAY_AGENTS_DIR", "MODEL", "TIER", "RUN_NUMBER"):
        monkeypatch.delenv(name, raising=False)


def _files(tmp: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in tmp.rglob("*") if p.is_file() and "-wal" not in p.name}


@pytest.fixture
def lock() -> Iterator[Callable[[Path], None]]:
    """Hold an exclusive lock on a state file, as a stuck process would."""
    held: list[sqlite3.Connection] = []

    def take(path: Path) -> None:
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("PRAGMA locking_mode=EXCLUSIVE")
        conn.execute("BEGIN EXCLUSIVE")
        held.append(conn)

    yield take
    for conn in held:
        conn.execute("ROLLBACK")
        conn.close()


def _run_process(args: tuple[str, ...], tmp: Path) -> tuple[int, str]:
    src = Path(__file__).resolve().parents[2] / "src"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(src), os.environ.get("PYTHONPATH", "")]),
    }
    command = [sys.executable, "-c", "from backstay.cli import main; main()", *args]
    done = subprocess.run(
        command, cwd=tmp, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    return done.returncode, done.stdout + done.stderr


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_a_user_error_exits_2_with_a_message_naming_it(
    case: Case, tmp_path: Path, lock: Callable[[Path], None]
) -> None:
    case.setup(tmp_path)
    if case.locked:
        lock(tmp_path / "state" / STATE_FILE)
    before = _files(tmp_path)
    if case.process:
        code, output = _run_process(case.args, tmp_path)
    else:
        result = invoke(*case.args)
        code, output = result.exit_code, result.output
        assert result.exception is None or isinstance(result.exception, SystemExit), output
    assert code == 2, output
    assert "Traceback" not in output
    for name in case.names:
        assert name in output, f"{name!r} not named in: {output}"
    after = _files(tmp_path)
    for path, data in before.items():
        assert after.get(path) == data, f"{path} changed or went missing"
