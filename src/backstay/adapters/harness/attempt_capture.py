"""``AttemptCapture``: one attempt of a retried harness run, in its own folder.

A harness run under a policy may take several attempts. The run's ``Capture`` in
``output_dir`` keeps everything, attempt after attempt (what a harness reads); each
attempt also writes to ``output_dir/attempt_N/`` — the same three logs and its own
``metrics.json`` — so that one attempt's output can be read apart from the others, laid
out like the engine's attempt folders. ``captured_attempt`` is how every harness run
(``BaseAdapter.arun``, and a run over a fallback chain) makes an attempt.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Final

from backstay.adapters.capture import Capture, Stream
from backstay.adapters.contract import AgentResult
from backstay.adapters.usage import Usage
from backstay.errors import AdapterError
from backstay.failure import Failure

__all__ = ["ATTEMPT_DIR_PREFIX", "AttemptCapture", "attempt_dir", "captured_attempt"]

ATTEMPT_DIR_PREFIX: Final = "attempt_"


def attempt_dir(output_dir: Path, number: int) -> Path:
    """The folder of attempt ``number`` (from 1) of a run in ``output_dir``."""
    return output_dir / f"{ATTEMPT_DIR_PREFIX}{number}"


class AttemptCapture(Capture):
    """The capture of one attempt: every write, log line, usage and exit code also goes to
    the run's capture. ``finish`` writes the attempt's ``metrics.json``."""

    def __init__(self, run: Capture, number: int) -> None:
        super().__init__(attempt_dir(run.output_dir, number))
        self._run = run
        self._started_at = _dt.datetime.now(_dt.UTC)
        self._started = time.monotonic()

    def write(self, stream: Stream, data: str | bytes) -> None:
        super().write(stream, data)
        self._run.write(stream, data)

    async def awrite(self, stream: Stream, data: str | bytes) -> None:
        await asyncio.to_thread(self.write, stream, data)

    def log(self, message: str) -> None:
        super().log(message)
        self._run.log(message)

    def add_usage(self, usage: Usage) -> None:
        super().add_usage(usage)
        self._run.add_usage(usage)

    def record_exit(self, exit_code: int) -> None:
        super().record_exit(exit_code)
        self._run.record_exit(exit_code)

    def finish(self, failure: Failure | None) -> None:
        """Write this attempt's ``metrics.json``: its own usage, duration, exit code
        (0 on success, 124 on timeout, else the agent's code or 1) and error."""
        if failure is None:
            exit_code = 0
        else:
            exit_code = AgentResult.failed(failure, exit_code=self.exit_code).exit_status
        self.write_metrics(
            usage=self.usage,
            duration_s=time.monotonic() - self._started,
            exit_code=exit_code,
            failure=failure,
            started_at=self._started_at,
            ended_at=_dt.datetime.now(_dt.UTC),
            durable=False,  # the run's own metrics.json, written at its end, is the record
        )


async def captured_attempt(
    run: Capture,
    number: int,
    dispatch: Callable[[Capture], Awaitable[AgentResult]],
    *,
    apart: bool,
) -> AgentResult:
    """Attempt ``number`` of a harness run: ``dispatch(capture)`` into the run's capture,
    and, when ``apart`` (a run that may take several attempts), through an
    ``AttemptCapture`` whose ``metrics.json`` is written however the attempt ends."""
    if not apart:
        return await dispatch(run)
    own = AttemptCapture(run, number)
    with own:
        failure: Failure | None = None
        try:
            return await dispatch(own)
        except AdapterError as err:
            failure = err.failure
            raise
        except BaseException:
            failure = Failure(code="ERR_CANCELLED", message="the attempt was cancelled")
            raise
        finally:
            own.finish(failure)
