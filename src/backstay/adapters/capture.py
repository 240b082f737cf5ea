"""``Capture``: the files one agent run leaves in its output directory.

* ``stdout.log`` and ``stderr.log``: the agent's own output, written as it arrives;
* ``agent.log``: what the adapter did (command, attempts, kills, classification), one
  timestamped line per event;
* ``metrics.json``: tokens, cost, calls, duration, exit code and error, replaced atomically.

Every text passes through ``backstay.redact.redact_personal`` (credentials, and personal
and payment data: e-mail addresses, card numbers, IBANs, phone numbers) before it reaches a
file; the directory is made ``0700`` and the files ``0600``. Output is
redacted a line at a time, so a key split across two reads is still caught; a line is
held back until its newline arrives, but never more than ``MAX_PENDING_CHARS`` of it
(then it is cut where no token can continue). Nothing else is kept in memory: every write
goes to the file at once (no buffer in the process), so a run killed mid-way leaves
everything it printed on disk.

Files are opened for appending: the attempts of one run, and a resumed run, add to the
same logs, and ``agent.log`` says where each attempt starts.
"""

from __future__ import annotations

import asyncio
import codecs
import datetime as _dt
import enum
import errno
import json
import os
import string
import threading
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType, TracebackType
from typing import TYPE_CHECKING, Any, Final

from backstay._private import PRIVATE_FILE, make_private_dirs
from backstay.adapters.usage import Usage
from backstay.redact import redact_personal

if TYPE_CHECKING:
    from backstay.failure import Failure

__all__ = ["METRICS_EXTRA_KEYS", "METRICS_FILE", "METRICS_KEYS", "Capture", "Stream"]

METRICS_FILE: Final = "metrics.json"
METRICS_KEYS: Final = (
    "tokens_input",
    "tokens_output",
    "tokens_total",
    "cost_usd",
    "api_calls",
    "duration_seconds",
    "exit_code",
    "error",
    "started_at",
    "ended_at",
)
# Keys the engine and ``backstay run`` may add after ``METRICS_KEYS``: the requested and
# the answering adapter and model, the candidate of each attempt of a run over a fallback
# chain, and the harness's ``RUN_NUMBER``.
METRICS_EXTRA_KEYS: Final = (
    "requested_adapter",
    "requested_model",
    "adapter",
    "model",
    "candidates",
    "run_number",
)
# The headers ``record_rate_limit_headers`` keeps: the providers' rate-limit headers
# (``backstay.policy.ratelimit``) and the waits of a refusal.
RATE_LIMIT_HEADER_PREFIXES: Final = ("anthropic-ratelimit-", "x-ratelimit-", "retry-after")
# The longest part of a line held back waiting for its newline.
MAX_PENDING_CHARS: Final = 64 * 1024
# Characters a secret may contain: an over-long line is cut after the last other character,
# looking back at most this far (no key or token is longer).
_TOKEN_CHARS: Final = frozenset(string.ascii_letters + string.digits + "_-.~+/=%")
_MAX_TOKEN_CHARS: Final = 4096
_LOG_FLAGS: Final = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC


class Stream(enum.StrEnum):
    """The three log files of a run."""

    STDOUT = "stdout"
    STDERR = "stderr"
    AGENT = "agent"

    @property
    def file_name(self) -> str:
        return f"{self.value}.log"


def utc_iso(moment: _dt.datetime) -> str:
    """``moment`` as ISO-8601 in UTC, to the millisecond."""
    return moment.astimezone(_dt.UTC).isoformat(timespec="milliseconds")


def _cut(text: str) -> int:
    """Where an over-long line may be cut without splitting a token."""
    end = len(text)
    floor = max(0, end - _MAX_TOKEN_CHARS)
    i = end
    while i > floor and text[i - 1] in _TOKEN_CHARS:
        i -= 1
    return i if i > floor else end


class _RedactingFile:
    """One log file: decodes, redacts whole lines, and writes each chunk straight to its
    descriptor (``O_APPEND``, no user-space buffer), so it is in the kernel at once."""

    def __init__(self, path: str) -> None:
        self._lock = threading.Lock()
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = ""
        # The file exists from the start (a reader may look before anything is written).
        self._fd = os.open(path, _LOG_FLAGS, PRIVATE_FILE)
        self._path = path
        self._closed = False

    def write(self, data: str | bytes) -> None:
        with self._lock:
            text = self._decoder.decode(data) if isinstance(data, bytes) else data
            pending = self._pending + text
            end = pending.rfind("\n") + 1
            if end == 0 and len(pending) > MAX_PENDING_CHARS:
                end = _cut(pending)
            if end:
                self._emit(pending[:end])
            self._pending = pending[end:]

    def write_line(self, stamp: str, text: str) -> None:
        """One whole line: ``stamp`` (made here, nothing to redact) and ``text``, redacted
        apart from it (short texts repeat, and their redaction is remembered)."""
        with self._lock:
            if not self._pending:
                self._emit(f"{stamp} {redact_personal(text)}\n", redacted=True)
                return
        self.write(f"{stamp} {text}\n")  # after a part line, with it, as ``write`` does

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            rest = self._pending + self._decoder.decode(b"", final=True)
            self._pending = ""
            try:
                if rest:
                    self._emit(rest)
            finally:
                self._closed = True
                os.close(self._fd)

    def _emit(self, text: str, *, redacted: bool = False) -> None:
        if self._closed:
            raise ValueError(f"{self._path} is closed")
        _write_all(self._fd, (text if redacted else redact_personal(text)).encode("utf-8"))


def _write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd``: ``os.write`` again after a short write (a signal,
    a full pipe); ``os.write`` itself retries when a signal interrupts it (PEP 475)."""
    done = os.write(fd, data)
    while done < len(data):
        wrote = os.write(fd, data[done:])
        if wrote == 0:  # pragma: no cover - write(2) of a non-empty buffer to a file
            raise OSError(errno.EIO, "write(2) wrote nothing")
        done += wrote


_FILE_NAMES: Final = tuple((stream, stream.file_name) for stream in Stream)


class Capture:
    """The log files and ``metrics.json`` of one run in ``output_dir`` (created if needed).

    Use as a (sync) context manager, or call ``close()``: it writes any line still
    waiting for its newline. Writes from several threads are safe; each stream keeps its
    own order. ``record_exit`` and ``add_usage`` collect what the attempts observed, for
    ``write_metrics`` to report even when an attempt fails.
    """

    def __init__(self, output_dir: Path | str) -> None:
        self.output_dir = make_private_dirs(output_dir)
        self._files: dict[Stream, _RedactingFile] = {}
        folder = os.fspath(self.output_dir)
        try:
            for stream, name in _FILE_NAMES:  # str paths: a ``Path`` each costs more
                self._files[stream] = _RedactingFile(f"{folder}/{name}")
        except BaseException:
            self.close()
            raise
        self._usage = Usage()
        self._exit_code: int | None = None
        self._rate_limit_headers: Mapping[str, str] = MappingProxyType({})

    def path(self, stream: Stream) -> Path:
        """The file ``stream`` is written to."""
        return self.output_dir / stream.file_name

    @property
    def metrics_path(self) -> Path:
        return self.output_dir / METRICS_FILE

    # Writing output as it arrives.

    def write(self, stream: Stream, data: str | bytes) -> None:
        """Append ``data`` (text, or UTF-8 bytes in any chunking) to ``stream``, redacted."""
        self._files[stream].write(data)

    async def awrite(self, stream: Stream, data: str | bytes) -> None:
        """``write`` without blocking the event loop."""
        await asyncio.to_thread(self._files[stream].write, data)

    def log(self, message: str) -> None:
        """One timestamped line in ``agent.log``."""
        stamp = _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds")  # as ``utc_iso``
        self._files[Stream.AGENT].write_line(stamp, message.rstrip())

    async def alog(self, message: str) -> None:
        """``log`` from a coroutine: one short line, written inline (a thread hand-off
        would cost more than the write)."""
        self.log(message)

    def close(self) -> None:
        for file in self._files.values():
            file.close()

    def __enter__(self) -> Capture:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # What the attempts observed.

    @property
    def usage(self) -> Usage:
        """The usage of every attempt recorded so far, added up."""
        return self._usage

    @property
    def exit_code(self) -> int | None:
        """The exit code of the last process an attempt ran; ``None`` before any."""
        return self._exit_code

    def add_usage(self, usage: Usage) -> None:
        self._usage = self._usage + usage

    def record_exit(self, exit_code: int) -> None:
        self._exit_code = exit_code

    @property
    def rate_limit_headers(self) -> Mapping[str, str]:
        """The rate-limit headers of the last provider answer an attempt recorded
        (lower-case names; empty before any): what the engine's limiters learn from."""
        return self._rate_limit_headers

    def record_rate_limit_headers(self, headers: Mapping[str, str]) -> None:
        """Keep the rate-limit headers of a provider's answer (``anthropic-ratelimit-*``,
        ``x-ratelimit-*``, ``retry-after``, ``retry-after-ms``; the others are dropped),
        replacing those of an earlier answer."""
        kept = {
            str(name).lower(): str(value)
            for name, value in headers.items()
            if str(name).lower().startswith(RATE_LIMIT_HEADER_PREFIXES)
        }
        self._rate_limit_headers = MappingProxyType(kept)

    # metrics.json

    def write_metrics(
        self,
        *,
        usage: Usage,
        duration_s: float,
        exit_code: int | None,
        failure: Failure | None,
        started_at: _dt.datetime,
        ended_at: _dt.datetime,
        durable: bool = True,
        extra: Mapping[str, Any] | None = None,
    ) -> Path:
        """Replace ``metrics.json`` atomically with exactly ``METRICS_KEYS``; ``error`` is
        ``"<code>: <message>"`` redacted, or null. Readers see the old file or the whole new
        one; ``durable`` also fsyncs it (see ``write_json_atomic``), for callers with no
        other durable record of the attempt. ``extra`` keys follow ``METRICS_KEYS`` (the
        engine adds which adapter and model answered, and which were requested)."""
        error = None if failure is None else redact_personal(f"{failure.code}: {failure.message}")
        metrics: dict[str, Any] = {
            "tokens_input": usage.prompt_tokens,
            "tokens_output": usage.output_tokens,
            "tokens_total": usage.tokens_total,
            "cost_usd": usage.cost_usd,
            "api_calls": usage.api_calls,
            "duration_seconds": round(duration_s, 3),
            "exit_code": exit_code,
            "error": error,
            "started_at": utc_iso(started_at),
            "ended_at": utc_iso(ended_at),
        }
        if extra:
            metrics.update({k: v for k, v in extra.items() if k not in metrics})
        write_json_atomic(self.metrics_path, metrics, durable=durable)
        return self.metrics_path


def write_json_atomic(path: Path, value: object, *, durable: bool = True) -> None:
    """Write ``value`` as JSON to ``path`` so that readers see the old file or the whole
    new one, never a part: a temporary file in the same directory, then ``os.replace``.
    ``durable`` adds an fsync of the file before the rename and of the directory after it,
    so that the new file also survives a crash of the machine."""
    data = (json_indented(value) + "\n").encode("utf-8")
    where = os.fspath(path)
    # Unique per process and thread, so concurrent writers never share a temporary file.
    folder, name = os.path.split(where)
    tmp = os.path.join(folder, f".{name}.{os.getpid()}.{threading.get_ident()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, PRIVATE_FILE)
    try:
        try:
            _write_all(fd, data)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, where)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if not durable:
        return
    dir_fd = os.open(folder or ".", os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


# Items of a flat object joined as ``json.dumps(indent=2)`` joins them, by the encoder
# written in C (``indent`` makes ``json`` use its pure-Python one, three times slower).
_FLAT_ENCODER: Final = json.JSONEncoder(separators=(",\n  ", ": "))
_SCALARS: Final = frozenset({str, int, float, bool, type(None)})


def json_indented(value: object) -> str:
    """``json.dumps(value, indent=2)``, the same text, made faster when ``value`` is a
    dict of ``str`` keys and scalar values (``metrics.json``)."""
    if (
        type(value) is dict
        and value
        and all(type(k) is str and type(v) in _SCALARS for k, v in value.items())
    ):
        return "{\n  " + _FLAT_ENCODER.encode(value)[1:-1] + "\n}"
    return json.dumps(value, indent=2)
