"""run_process: process group, deadline and stall kills, closed stdin, explicit environment.

Every test runs real processes and bounds its own time; a grandchild is announced on
stdout (``spawned <pid>``) so the test can check it is gone afterwards.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.adapters.support import gone_within, python, spawned_pids

from backstay.adapters.capture import Capture, Stream
from backstay.adapters.cli.orphans import ATTEMPT_TAG
from backstay.adapters.cli.process import (
    TAIL_CHARS,
    ProcessOutcome,
    run_process,
    run_process_sync,
)
from backstay.errors import ConfigError

SPAWN_AND_SLEEP = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
print("spawned", child.pid, flush=True)
time.sleep(60)
"""


@pytest.fixture
def capture(tmp_path: Path) -> Iterator[Capture]:
    with Capture(tmp_path / "out") as cap:
        yield cap


def run(
    argv: list[str],
    capture: Capture,
    *,
    timeout_s: float = 10.0,
    env: dict[str, str] | None = None,
    **kwargs: object,
) -> ProcessOutcome:
    return run_process_sync(
        argv,
        cwd=capture.output_dir,
        env=env if env is not None else {},
        timeout_s=timeout_s,
        capture=capture,
        **kwargs,  # type: ignore[arg-type]
    )


def test_exit_code_and_both_streams_are_captured(capture: Capture) -> None:
    code = "import sys; print('to out'); print('to err', file=sys.stderr); sys.exit(3)"
    outcome = run(python(code), capture)
    assert (outcome.exit_code, outcome.timed_out, outcome.stalled) == (3, False, False)
    assert capture.path(Stream.STDOUT).read_text() == "to out\n"
    assert capture.path(Stream.STDERR).read_text() == "to err\n"
    assert (outcome.stdout_tail, outcome.stderr_tail) == ("to out\n", "to err\n")


def test_the_deadline_kills_the_whole_group_and_reports_124(capture: Capture) -> None:
    started = time.monotonic()
    outcome = run(python(SPAWN_AND_SLEEP), capture, timeout_s=1.0, kill_grace_s=0.5)
    assert outcome.exit_code == 124
    assert outcome.timed_out
    assert time.monotonic() - started < 4.0
    [grandchild] = spawned_pids(capture.path(Stream.STDOUT))
    assert gone_within(outcome.pid)
    assert gone_within(grandchild)


def test_a_child_ignoring_sigterm_is_killed_after_the_grace(capture: Capture) -> None:
    code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"
    started = time.monotonic()
    outcome = run(python(code), capture, timeout_s=0.5, kill_grace_s=0.3)
    assert outcome.exit_code == 124
    assert 0.8 <= time.monotonic() - started < 4.0
    assert gone_within(outcome.pid)


def test_no_output_for_the_stall_limit_kills_the_group(capture: Capture) -> None:
    code = "import time; print('started', flush=True); time.sleep(60)"
    started = time.monotonic()
    outcome = run(python(code), capture, timeout_s=30.0, stall_timeout_s=0.5, kill_grace_s=0.2)
    assert (outcome.stalled, outcome.timed_out, outcome.exit_code) == (True, False, 124)
    assert time.monotonic() - started < 4.0
    assert gone_within(outcome.pid)


def test_steady_output_is_not_a_stall(capture: Capture) -> None:
    code = "import time\nfor i in range(8):\n    print(i, flush=True)\n    time.sleep(0.1)"
    outcome = run(python(code), capture, stall_timeout_s=0.5)
    assert (outcome.stalled, outcome.exit_code) == (False, 0)


def test_stdin_is_closed_so_a_reader_gets_end_of_file(capture: Capture) -> None:
    outcome = run(python("import sys; print(repr(sys.stdin.read()))"), capture, timeout_s=5.0)
    assert outcome.exit_code == 0
    assert outcome.stdout_tail == "''\n"


def test_the_environment_is_the_mapping_given_and_the_attempt_tag(
    capture: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BACKSTAY_TEST_NOT_PASSED", "inherited")
    env_program = shutil.which("env")
    assert env_program is not None
    outcome = run([env_program], capture, env={"ONLY_THIS": "given"})
    assert sorted(outcome.stdout_tail.splitlines()) == [
        f"{ATTEMPT_TAG}={capture.output_dir.absolute()}",
        "ONLY_THIS=given",
    ]


def test_a_cancelled_caller_kills_the_group(capture: Capture) -> None:
    stdout = capture.path(Stream.STDOUT)

    async def main() -> None:
        task = asyncio.create_task(
            run_process(
                python(SPAWN_AND_SLEEP),
                cwd=capture.output_dir,
                env={},
                timeout_s=30.0,
                capture=capture,
                kill_grace_s=0.5,
            )
        )
        deadline = time.monotonic() + 5.0
        while not spawned_pids(stdout) and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    [grandchild] = spawned_pids(stdout)
    assert gone_within(grandchild)
    assert "started pid" in capture.path(Stream.AGENT).read_text()


def test_what_a_finished_child_leaves_running_is_killed(capture: Capture) -> None:
    code = (
        "import subprocess, sys\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "print('spawned', child.pid, flush=True)"
    )
    started = time.monotonic()
    outcome = run(python(code), capture)
    assert outcome.exit_code == 0
    assert time.monotonic() - started < 5.0  # the grandchild held stdout open: not waited for
    [grandchild] = spawned_pids(capture.path(Stream.STDOUT))
    assert gone_within(grandchild)


def test_a_death_by_signal_is_reported_as_128_plus_the_signal(capture: Capture) -> None:
    outcome = run(python("import os, signal; os.kill(os.getpid(), signal.SIGKILL)"), capture)
    assert outcome.exit_code == 128 + signal.SIGKILL


def test_stdout_lines_reach_the_callback_as_they_arrive(capture: Capture) -> None:
    lines: list[str] = []
    code = "import sys; sys.stdout.write('one\\ntwo\\nlast without newline')"
    run(python(code), capture, on_stdout_line=lines.append)
    assert lines == ["one", "two", "last without newline"]


def test_the_tails_keep_only_the_end_of_the_output(capture: Capture) -> None:
    code = f"print('x' * {TAIL_CHARS * 3}, end=''); print('END', end='')"
    outcome = run(python(code), capture)
    assert len(outcome.stdout_tail) == TAIL_CHARS
    assert outcome.stdout_tail.endswith("xEND")
    assert capture.path(Stream.STDOUT).stat().st_size > 0


def test_the_async_form_returns_the_same_outcome(capture: Capture) -> None:
    outcome = asyncio.run(
        run_process(python("print('hi')"), cwd=os.getcwd(), env={}, timeout_s=5, capture=capture)
    )
    assert (outcome.exit_code, outcome.stdout_tail) == (0, "hi\n")


@pytest.mark.parametrize(
    ("changes", "where"),
    [
        ({"argv": []}, "argv"),
        ({"argv": "python -c pass"}, "argv"),
        ({"timeout_s": 0}, "timeout_s"),
        ({"timeout_s": float("nan")}, "timeout_s"),
        ({"stall_timeout_s": -1.0}, "stall_timeout_s"),
        ({"kill_grace_s": -0.1}, "kill_grace_s"),
        ({"env": {"A": 1}}, "env['A']"),
        ({"cwd": "/nonexistent/backstay-test"}, "cwd"),
        ({"launcher": "env"}, "launcher"),
        ({"launcher": ["env", ""]}, "launcher[1]"),
    ],
)
def test_invalid_arguments_name_the_field(
    capture: Capture, changes: dict[str, object], where: str
) -> None:
    kwargs: dict[str, object] = {
        "argv": python("pass"),
        "cwd": capture.output_dir,
        "env": {},
        "timeout_s": 5.0,
        "capture": capture,
    }
    kwargs.update(changes)
    with pytest.raises(ConfigError) as info:
        run_process_sync(**kwargs)  # type: ignore[arg-type]
    assert info.value.where == where


def test_a_missing_program_raises_before_any_process_exists(capture: Capture) -> None:
    with pytest.raises(FileNotFoundError):
        run(["/nonexistent/backstay-agent"], capture)


def test_the_launcher_prefixes_the_command_and_is_logged(capture: Capture) -> None:
    outcome = run_process_sync(
        python("import os; print(os.environ['LAUNCHED'])"),
        cwd=capture.output_dir,
        env={},
        timeout_s=10,
        capture=capture,
        launcher=["env", "LAUNCHED=by-the-launcher"],
    )
    assert (outcome.exit_code, outcome.stdout_tail) == (0, "by-the-launcher\n")
    log = (capture.output_dir / "agent.log").read_text()
    assert "env LAUNCHED=by-the-launcher" in log


def test_the_deadline_kills_a_command_started_by_a_launcher(capture: Capture) -> None:
    outcome = run_process_sync(
        python(SPAWN_AND_SLEEP),
        cwd=capture.output_dir,
        env={},
        timeout_s=1.0,
        capture=capture,
        launcher=["env"],
        kill_grace_s=0.2,
    )
    assert outcome.timed_out
    assert all(
        gone_within(pid) for pid in [outcome.pid, *spawned_pids(capture.output_dir / "stdout.log")]
    )


def test_stderr_lines_reach_their_callback(capture: Capture) -> None:
    lines: list[str] = []
    code = "import sys; print('one', file=sys.stderr); print('two', file=sys.stderr)"
    outcome = run(python(code), capture, on_stderr_line=lines.append)
    assert outcome.exit_code == 0
    assert lines == ["one", "two"]


def test_setting_stop_kills_the_whole_group_early(capture: Capture) -> None:
    stop = asyncio.Event()
    seen: list[str] = []

    def line(text: str) -> None:
        seen.append(text)
        if text.startswith("spawned "):
            stop.set()

    started = time.monotonic()
    outcome = run(python(SPAWN_AND_SLEEP), capture, timeout_s=20.0, on_stdout_line=line, stop=stop)
    assert (outcome.stopped, outcome.timed_out, outcome.stalled) == (True, False, False)
    assert outcome.killed
    assert outcome.exit_code == 128 + signal.SIGTERM
    assert time.monotonic() - started < 10.0
    [grandchild] = spawned_pids(capture.path(Stream.STDOUT))
    assert gone_within(outcome.pid)
    assert gone_within(grandchild)
