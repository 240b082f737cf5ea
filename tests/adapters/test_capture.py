"""Capture: logs written as output arrives, redacted; metrics.json complete and atomic."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import threading
import time
from pathlib import Path

import pytest
from tests.adapters.support import CANARY_KEY, rss_kib

from backstay.adapters.capture import (
    MAX_PENDING_CHARS,
    METRICS_KEYS,
    Capture,
    Stream,
    write_json_atomic,
)
from backstay.adapters.cli.process import run_process_sync
from backstay.adapters.usage import Usage
from backstay.failure import Failure

T0 = dt.datetime(2026, 4, 23, 1, 0, tzinfo=dt.UTC)
T1 = T0 + dt.timedelta(seconds=12.5)


def test_the_three_logs_exist_from_the_start(tmp_path: Path) -> None:
    with Capture(tmp_path / "new" / "dir") as cap:
        assert [cap.path(s).name for s in Stream] == ["stdout.log", "stderr.log", "agent.log"]
        assert all(cap.path(s).exists() for s in Stream)


def test_a_complete_line_is_on_disk_before_close(tmp_path: Path) -> None:
    with Capture(tmp_path) as cap:
        cap.write(Stream.STDOUT, "first line\nsecond, unfinished")
        assert cap.path(Stream.STDOUT).read_text() == "first line\n"
    assert cap.path(Stream.STDOUT).read_text() == "first line\nsecond, unfinished"


def test_a_key_split_across_two_writes_is_still_redacted(tmp_path: Path) -> None:
    with Capture(tmp_path) as cap:
        cap.write(Stream.STDERR, f"key={CANARY_KEY[:15]}")
        cap.write(Stream.STDERR, f"{CANARY_KEY[15:]} end\n")
    text = cap.path(Stream.STDERR).read_text()
    assert text == "key=[REDACTED] end\n"


def test_utf8_split_across_byte_chunks_decodes_intact(tmp_path: Path) -> None:
    with Capture(tmp_path) as cap:
        cap.write(Stream.STDOUT, b"caf\xc3")
        cap.write(Stream.STDOUT, b"\xa9\n")
    assert cap.path(Stream.STDOUT).read_text(encoding="utf-8") == "café\n"


def test_a_line_without_newline_is_written_in_bounded_pieces(tmp_path: Path) -> None:
    with Capture(tmp_path) as cap:
        for _ in range(8):
            cap.write(Stream.STDOUT, "word " * (MAX_PENDING_CHARS // 10))
        written = cap.path(Stream.STDOUT).stat().st_size
        assert written >= 8 * 5 * (MAX_PENDING_CHARS // 10) - MAX_PENDING_CHARS
    assert cap.path(Stream.STDOUT).stat().st_size == 8 * 5 * (MAX_PENDING_CHARS // 10)


def test_a_long_line_is_not_cut_inside_a_key(tmp_path: Path) -> None:
    with Capture(tmp_path) as cap:
        cap.write(Stream.STDOUT, "x " * MAX_PENDING_CHARS + CANARY_KEY[:20])
        cap.write(Stream.STDOUT, CANARY_KEY[20:] + "\n")
    text = cap.path(Stream.STDOUT).read_text()
    assert CANARY_KEY[20:] not in text
    assert text.endswith("[REDACTED]\n")


def test_async_writes_land_in_their_files(tmp_path: Path) -> None:
    async def main(cap: Capture) -> None:
        await cap.awrite(Stream.STDOUT, "async out\n")
        await cap.alog("an event")

    with Capture(tmp_path) as cap:
        asyncio.run(main(cap))
    assert cap.path(Stream.STDOUT).read_text() == "async out\n"
    assert cap.path(Stream.AGENT).read_text().rstrip().endswith("an event")


def test_agent_log_lines_are_timestamped_in_utc_and_redacted(tmp_path: Path) -> None:
    with Capture(tmp_path) as cap:
        cap.log(f"header x-api-key: {CANARY_KEY}")
    stamp, _, message = cap.path(Stream.AGENT).read_text().rstrip("\n").partition(" ")
    assert dt.datetime.fromisoformat(stamp).utcoffset() == dt.timedelta(0)
    assert message == "header x-api-key: [REDACTED]"


def test_a_reopened_capture_appends(tmp_path: Path) -> None:
    for text in ("attempt 1\n", "attempt 2\n"):
        with Capture(tmp_path) as cap:
            cap.write(Stream.STDOUT, text)
    assert (tmp_path / "stdout.log").read_text() == "attempt 1\nattempt 2\n"


def _metrics(cap: Capture, failure: Failure | None = None) -> dict[str, object]:
    usage = Usage(
        input_tokens=100,
        output_tokens=20,
        cache_read_tokens=30,
        cache_write_tokens=5,
        cost_usd=0.25,
        api_calls=3,
    )
    cap.write_metrics(
        usage=usage, duration_s=12.5, exit_code=0, failure=failure, started_at=T0, ended_at=T1
    )
    loaded: dict[str, object] = json.loads(cap.metrics_path.read_text())
    return loaded


def test_metrics_hold_exactly_the_contract_keys(tmp_path: Path) -> None:
    with Capture(tmp_path) as cap:
        metrics = _metrics(cap)
    assert tuple(metrics) == METRICS_KEYS
    assert metrics == {
        "tokens_input": 135,
        "tokens_output": 20,
        "tokens_total": 155,
        "cost_usd": 0.25,
        "api_calls": 3,
        "duration_seconds": 12.5,
        "exit_code": 0,
        "error": None,
        "started_at": "2026-04-23T01:00:00.000+00:00",
        "ended_at": "2026-04-23T01:00:12.500+00:00",
    }


def test_metrics_error_is_the_redacted_code_and_message(tmp_path: Path) -> None:
    failure = Failure(code="ERR_HTTP_401_UNAUTHORIZED", message=f"bad key {CANARY_KEY}")
    with Capture(tmp_path) as cap:
        metrics = _metrics(cap, failure)
    assert metrics["error"] == "ERR_HTTP_401_UNAUTHORIZED: bad key [REDACTED]"
    assert CANARY_KEY not in cap.metrics_path.read_text()


def test_readers_never_see_a_partial_metrics_file(tmp_path: Path) -> None:
    target = tmp_path / "metrics.json"
    write_json_atomic(target, {"n": 0})
    stop = threading.Event()
    bad: list[str] = []

    def read() -> None:
        while not stop.is_set():
            text = target.read_text()
            try:
                json.loads(text)
            except ValueError:
                bad.append(text)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for n in range(200):
            write_json_atomic(target, {"n": n, "padding": "x" * 20_000})
    finally:
        stop.set()
        reader.join()
    assert bad == []
    assert [p.name for p in tmp_path.iterdir()] == ["metrics.json"]


def test_a_failed_metrics_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "metrics.json"
    write_json_atomic(target, {"n": 1})
    with pytest.raises(TypeError):
        write_json_atomic(target, {"n": object()})
    assert json.loads(target.read_text()) == {"n": 1}
    assert os.listdir(tmp_path) == ["metrics.json"]


def test_100_mb_of_output_streams_through_with_flat_memory(tmp_path: Path) -> None:
    total = 100_000_000
    peak = [rss_kib()]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak.append(rss_kib())
            time.sleep(0.005)

    sampler = threading.Thread(target=sample)
    before = rss_kib()
    sampler.start()
    started = time.monotonic()
    try:
        with Capture(tmp_path) as cap:
            outcome = run_process_sync(
                ["sh", "-c", f"yes | head -c {total}"],
                cwd=tmp_path,
                env={"PATH": os.defpath},
                timeout_s=60,
                capture=cap,
            )
    finally:
        done.set()
        sampler.join()
    assert outcome.exit_code == 0
    assert cap.path(Stream.STDOUT).stat().st_size == total
    assert time.monotonic() - started < 15
    assert max(peak) - before < 32 * 1024, f"RSS grew by {max(peak) - before} KiB"


def test_a_capture_that_writes_nothing_leaves_three_empty_logs(tmp_path: Path) -> None:
    with Capture(tmp_path / "a") as capture:
        pass
    assert {p.name: p.stat().st_size for p in capture.output_dir.iterdir()} == {
        "stdout.log": 0,
        "stderr.log": 0,
        "agent.log": 0,
    }


def test_writing_to_a_closed_capture_is_refused(tmp_path: Path) -> None:
    capture = Capture(tmp_path)
    capture.close()
    with pytest.raises(ValueError, match=r"stdout\.log is closed"):
        capture.write(Stream.STDOUT, "late\n")
    capture.close()  # closing twice is harmless


def test_a_non_durable_metrics_write_is_whole_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "metrics.json"
    write_json_atomic(target, {"n": 1})
    write_json_atomic(target, {"n": 2}, durable=False)
    assert json.loads(target.read_text()) == {"n": 2}
    assert os.listdir(tmp_path) == ["metrics.json"]


def test_only_rate_limit_headers_are_kept_lower_cased_and_the_last_answer_wins(
    tmp_path: Path,
) -> None:
    with Capture(tmp_path) as capture:
        assert capture.rate_limit_headers == {}
        capture.record_rate_limit_headers(
            {"X-RateLimit-Limit-Requests": "60", "Set-Cookie": "s=1", "x-api-key": "k"}
        )
        assert capture.rate_limit_headers == {"x-ratelimit-limit-requests": "60"}
        capture.record_rate_limit_headers(
            {"anthropic-ratelimit-requests-remaining": "0", "retry-after": "3"}
        )
        assert capture.rate_limit_headers == {
            "anthropic-ratelimit-requests-remaining": "0",
            "retry-after": "3",
        }
