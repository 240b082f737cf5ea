"""AttemptCapture: one attempt of a retried harness run writes to its own folder and to
the run's files alike."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from backstay.adapters.capture import METRICS_KEYS, Capture, Stream
from backstay.adapters.harness.attempt_capture import AttemptCapture, attempt_dir
from backstay.adapters.usage import Usage
from backstay.failure import Failure


def _metrics(folder: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((folder / "metrics.json").read_text())
    return loaded


def test_output_goes_to_the_attempts_folder_and_to_the_run(tmp_path: Path) -> None:
    with Capture(tmp_path) as run:
        for number in (1, 2):
            with AttemptCapture(run, number) as own:
                own.write(Stream.STDOUT, f"attempt {number}\n".encode())
                own.log(f"note {number}")
    assert (tmp_path / "stdout.log").read_text() == "attempt 1\nattempt 2\n"
    assert (attempt_dir(tmp_path, 2) / "stdout.log").read_text() == "attempt 2\n"
    assert "note 1" not in (attempt_dir(tmp_path, 2) / "agent.log").read_text()
    assert "note 2" in (tmp_path / "agent.log").read_text()


def test_usage_adds_up_in_the_run_and_stays_apart_in_each_attempt(tmp_path: Path) -> None:
    with Capture(tmp_path) as run:
        for number in (1, 2):
            with AttemptCapture(run, number) as own:
                own.add_usage(Usage(input_tokens=10, output_tokens=2, api_calls=1))
                assert own.usage.api_calls == 1
        assert (run.usage.api_calls, run.usage.input_tokens) == (2, 20)


def test_finish_writes_the_attempts_own_metrics(tmp_path: Path) -> None:
    failure = Failure(code="ERR_HTTP_529_OVERLOADED", message="overloaded")
    with Capture(tmp_path) as run:
        first = AttemptCapture(run, 1)
        with first:
            first.add_usage(Usage(api_calls=1))
            first.finish(failure)
        second = AttemptCapture(run, 2)
        with second:
            second.record_exit(0)
            second.finish(None)
    failed, succeeded = _metrics(attempt_dir(tmp_path, 1)), _metrics(attempt_dir(tmp_path, 2))
    assert tuple(failed) == METRICS_KEYS
    assert (failed["exit_code"], failed["api_calls"]) == (1, 1)
    assert failed["error"] == "ERR_HTTP_529_OVERLOADED: overloaded"
    assert (succeeded["exit_code"], succeeded["error"]) == (0, None)


def test_a_timed_out_attempt_says_exit_code_124(tmp_path: Path) -> None:
    with Capture(tmp_path) as run:
        own = AttemptCapture(run, 1)
        with own:
            own.finish(Failure(code="ERR_TIMEOUT", message="past its deadline"))
    assert _metrics(attempt_dir(tmp_path, 1))["exit_code"] == 124
