"""``run_captured``: the frame of one harness run, shared by ``BaseAdapter.arun`` and a
run over a fallback chain (``backstay.fallback.harness``).

The run's ``Capture`` in ``output_dir`` is open for the whole run; ``body`` makes its
attempts (each through ``captured_attempt``: into the run's files, and into its own
``attempt_N/`` folder when the run may take several). Every outcome becomes an
``AgentResult`` — an ``AdapterError``'s failure, any other exception classified — and
``metrics.json`` is written once at the end, on success, failure, timeout and
cancellation alike, with the usage of every attempt added up (and ``extra`` keys after
the standard ones).

The agent's environment is decided before the run starts, by its caller, and is the same
rule for both: the variables given explicitly over the standard variables of the
attempt's own adapter's provider (``backstay.adapters.provider_env.agent_env``) —
``BaseAdapter.arun`` for its adapter, ``backstay.config.harness_run`` for each candidate
of a chain (``HarnessRun.env_for``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as _dt
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, Final

from backstay.adapters.capture import Capture, Stream
from backstay.adapters.contract import AgentResult
from backstay.classify import classify
from backstay.errors import AdapterError
from backstay.failure import Failure
from backstay.taxonomy import FailureKind

__all__ = ["CANCELLED_EXIT_CODE", "run_captured"]

# The exit code of a run cancelled by its caller (as a shell reports Ctrl-C).
CANCELLED_EXIT_CODE: Final = 130


def _none() -> str | None:
    return None


async def run_captured(
    output_dir: Path,
    body: Callable[[Capture], Awaitable[AgentResult]],
    *,
    classify_error: Callable[[Exception], Failure] = classify,
    partial: Callable[[], str | None] = _none,
    extra: Callable[[], Mapping[str, Any]] | None = None,
    answered_by: Callable[[], str | None] = _none,
) -> AgentResult:
    """Run ``body`` with the run's capture; its result, or the failure it ended in.

    ``classify_error`` turns an exception other than ``AdapterError`` (such as a policy's
    refusal to call) into a ``Failure``; ``partial`` gives the partial output to keep when
    the error carries none; ``extra`` the keys ``metrics.json`` adds; ``answered_by`` who
    ran the last attempt, for the run's closing log line.
    """
    with Capture(output_dir) as capture:
        started_at, started = _dt.datetime.now(_dt.UTC), time.monotonic()

        def finish(result: AgentResult) -> AgentResult:
            return _finish(
                capture,
                result,
                started_at=started_at,
                started=started,
                extra=extra,
                answered_by=answered_by(),
            )

        try:
            result = await body(capture)
        except AdapterError as err:
            result = _failed(err.failure, capture, err.partial_output or partial())
        except asyncio.CancelledError:
            cancelled = Failure(code="ERR_CANCELLED", message="the run was cancelled")
            finish(_failed(cancelled, capture, partial()))
            raise
        except Exception as exc:  # noqa: BLE001 - a policy refused to call (Rejected): still a record
            result = _failed(classify_error(exc), capture, None)
        return finish(result)


def _failed(failure: Failure, capture: Capture, partial: str | None) -> AgentResult:
    return AgentResult.failed(
        failure, output=partial or "", usage=capture.usage, exit_code=capture.exit_code
    )


def _finish(
    capture: Capture,
    result: AgentResult,
    *,
    started_at: _dt.datetime,
    started: float,
    extra: Callable[[], Mapping[str, Any]] | None,
    answered_by: str | None,
) -> AgentResult:
    duration = time.monotonic() - started
    result = dataclasses.replace(result, usage=capture.usage, duration_s=duration)
    cancelled = result.failure is not None and result.failure.code == "ERR_CANCELLED"
    exit_code = CANCELLED_EXIT_CODE if cancelled else result.exit_status
    capture.write_metrics(
        usage=result.usage,
        duration_s=duration,
        exit_code=exit_code,
        failure=result.failure,
        started_at=started_at,
        ended_at=_dt.datetime.now(_dt.UTC),
        extra=None if extra is None else extra(),
    )
    on = "" if answered_by is None else f" on {answered_by}"
    capture.log(f"run {result.status}{on} with exit code {exit_code} after {duration:.3f} s")
    if result.failure is not None:
        # The evaluation harness interface reads errors (a timeout's message too) from
        # stderr.log; the line is redacted like everything written there.
        failure = result.failure
        timed_out = " (timed out)" if failure.kind is FailureKind.TIMEOUT else ""
        capture.write(
            Stream.STDERR, f"backstay: error{timed_out}: {failure.code}: {failure.message}\n"
        )
    return result
