"""``StreamingCapture``: the evaluation harness interface's capture, as its adapters use it.

::

    with StreamingCapture(output_dir) as capture:
        capture.write_stdout(result.stdout)
        capture.write_stderr(result.stderr)
        capture.set_exit_code(result.returncode)
        capture.update_metrics(tokens_input=…, tokens_output=…, api_calls=1)
        capture.set_error("Execution timeout")

It is backstay's ``Capture`` (``stdout.log``, ``stderr.log``, ``agent.log``, redacted as
they are written) with the interface's method names; leaving the block writes
``metrics.json`` in the interface's schema from what was set, unless it is already there.
"""

from __future__ import annotations

import datetime as _dt
import time
from pathlib import Path
from types import TracebackType

from backstay.adapters.capture import Capture, Stream
from backstay.adapters.usage import Usage
from backstay.failure import Failure

__all__ = ["StreamingCapture"]


class StreamingCapture(Capture):
    """A ``Capture`` with ``write_stdout``, ``write_stderr``, ``set_exit_code``,
    ``update_metrics`` and ``set_error``; ``metrics.json`` is written on leaving."""

    def __init__(self, output_dir: Path | str) -> None:
        super().__init__(output_dir)
        self._started_at = _dt.datetime.now(_dt.UTC)
        self._started = time.monotonic()
        self._error: str | None = None

    def write_stdout(self, data: str | bytes) -> None:
        self.write(Stream.STDOUT, data)

    def write_stderr(self, data: str | bytes) -> None:
        self.write(Stream.STDERR, data)

    def set_exit_code(self, exit_code: int) -> None:
        self.record_exit(exit_code)

    def update_metrics(
        self,
        *,
        tokens_input: int = 0,
        tokens_output: int = 0,
        api_calls: int = 0,
        cost_usd: float | None = None,
    ) -> None:
        """Add these counts to the run's usage."""
        self.add_usage(
            Usage(
                input_tokens=tokens_input,
                output_tokens=tokens_output,
                api_calls=api_calls,
                cost_usd=cost_usd,
            )
        )

    def set_error(self, message: str) -> None:
        """The run's error, for ``metrics.json`` (redacted there)."""
        self._error = str(message)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            if not self.metrics_path.exists():
                error = self._error
                if error is None and exc is not None:
                    error = f"{type(exc).__name__}: {exc}"
                self.write_metrics(
                    usage=self.usage,
                    duration_s=time.monotonic() - self._started,
                    exit_code=self.exit_code,
                    failure=None if error is None else Failure(code="ERR_UNKNOWN", message=error),
                    started_at=self._started_at,
                    ended_at=_dt.datetime.now(_dt.UTC),
                )
        finally:
            super().__exit__(exc_type, exc, tb)
