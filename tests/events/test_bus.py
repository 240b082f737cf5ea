"""The logging sink takes an event only when a handler would write it: in a program that
configured no logging, nothing is built for backstay's ``NullHandler`` alone."""

from __future__ import annotations

import io
import logging
import subprocess
import sys
import textwrap

from backstay.events import EventBus, LoggingSink

WARNING = logging.WARNING


def _family(*, parent_handlers: list[logging.Handler]) -> logging.Logger:
    """A child logger with a ``NullHandler`` under a parent of its own (not the process's
    root, which the test runner fills with its capture handlers)."""
    parent = logging.Logger("parent", level=WARNING)
    parent.handlers = parent_handlers
    child = logging.Logger("parent.child")
    child.parent = parent
    child.addHandler(logging.NullHandler())
    return child


def test_a_program_that_configured_no_logging_builds_no_event() -> None:
    script = textwrap.dedent(
        """
        import logging, sys
        import backstay
        from backstay.events import BUS

        assert BUS.silent() and not BUS.wants(logging.WARNING)
        calls = iter([ConnectionError("[Errno 104] Connection reset by peer"), None])

        def flaky():
            failure = next(calls)
            if failure is not None:
                raise failure
            return "ok"

        policy = backstay.RetryPolicy(
            name="sinks", max_attempts=3, initial_delay_s=0.0, max_delay_s=0.0,
            jitter_mode="none",
        )
        assert backstay.call(flaky, policy=policy) == "ok"
        logging.basicConfig(stream=sys.stdout)
        assert not BUS.silent() and BUS.wants(logging.WARNING)
        calls = iter([ConnectionError("[Errno 104] Connection reset by peer"), None])
        assert backstay.call(flaky, policy=policy) == "ok"
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1, lines  # the failed attempt of the second call alone
    assert "retry.attempt_failed" in lines[0]


def test_only_null_handlers_write_nothing() -> None:
    assert not LoggingSink(_family(parent_handlers=[logging.NullHandler()])).accepts(WARNING)


def test_a_handler_up_the_hierarchy_takes_warnings() -> None:
    logger = _family(parent_handlers=[logging.StreamHandler(io.StringIO())])
    assert LoggingSink(logger).accepts(WARNING)
    assert not LoggingSink(logger).accepts(logging.INFO)  # below the parent's level


def test_a_handler_that_takes_only_errors_does_not_take_a_warning() -> None:
    handler = logging.StreamHandler(io.StringIO())
    handler.setLevel(logging.ERROR)
    logger = _family(parent_handlers=[handler])
    assert not LoggingSink(logger).accepts(WARNING)
    assert LoggingSink(logger).accepts(logging.ERROR)


def test_a_subclass_of_null_handler_counts_as_writing() -> None:
    class Counting(logging.NullHandler):
        pass

    assert LoggingSink(_family(parent_handlers=[Counting()])).accepts(WARNING)


def test_a_logger_that_does_not_propagate_stops_the_walk() -> None:
    logger = _family(parent_handlers=[logging.StreamHandler(io.StringIO())])
    logger.propagate = False
    assert not LoggingSink(logger).accepts(WARNING)


def test_a_logger_with_no_handler_anywhere_writes_through_the_last_resort() -> None:
    alone = logging.Logger("alone", level=logging.INFO)  # no parent, no handlers
    assert LoggingSink(alone).accepts(WARNING)
    assert not LoggingSink(alone).accepts(logging.INFO)  # the last resort's own level


def test_a_bus_with_a_sink_of_its_own_is_never_silent() -> None:
    class Everything:
        min_level = 0

        def accepts(self, level: int) -> bool:
            return True

        def emit(self, event: object) -> None:
            pass

    assert not EventBus((LoggingSink(), Everything())).silent()
    assert not EventBus((Everything(),)).silent()
    assert EventBus(()).silent()
