"""``ExportWatch`` and ``finish_within``: the exporters' records dropped, their first
failure one line, and an exit that does not wait for an endpoint known to be down."""

from __future__ import annotations

import logging
import threading

from backstay.observe.otel_watch import EXPORT_LOGGERS, ExportWatch, finish_within

EXPORTER = EXPORT_LOGGERS[1]


def test_the_exporters_records_are_dropped_and_the_first_failure_said_once() -> None:
    said: list[str] = []
    watch = ExportWatch("http://127.0.0.1:9", said.append)
    watch.install()
    try:
        logger = logging.getLogger(EXPORTER)
        logger.info("a quiet line")
        assert not watch.down
        for _ in range(3):
            logger.warning("Transient error, retrying in 1.00s")
        logger.error("Failed to export spans batch")
    finally:
        watch.remove()
    assert watch.down
    assert len(said) == 1
    assert "http://127.0.0.1:9 failed" in said[0]


def test_removed_the_watch_drops_nothing() -> None:
    watch = ExportWatch("e", lambda _: None)
    watch.install()
    watch.remove()
    assert watch not in logging.getLogger(EXPORTER).filters


def test_an_exit_does_not_wait_for_work_stuck_on_a_down_endpoint() -> None:
    release = threading.Event()
    watch = ExportWatch("e", lambda _: None)
    watch.down = True
    try:
        assert finish_within(lambda: release.wait(30), watch) is False
    finally:
        release.set()


def test_finished_work_is_reported_finished() -> None:
    done: list[bool] = []
    assert finish_within(lambda: done.append(True), None) is True
    assert done == [True]


def test_a_failing_exit_step_never_raises() -> None:
    def fail() -> None:
        raise OSError("connection refused")

    assert finish_within(fail, None) is True
