"""``testing_mode()``: every retry delay zero and attempts capped, for users' test suites."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Final

from backstay.call._after_failure import test_mode

__all__ = ["DEFAULT_TEST_ATTEMPTS", "testing_mode"]

DEFAULT_TEST_ATTEMPTS: Final = 3


@contextlib.contextmanager
def testing_mode(*, attempts: int | None = DEFAULT_TEST_ATTEMPTS) -> Iterator[None]:
    """Inside the block every retry delay is zero (no sleep at all) and calls make at most
    ``attempts`` attempts (``None``: as the policy says). Not for concurrent test threads
    that expect different modes: the switch is process-wide, like the clock it replaces."""
    previous = (test_mode.active, test_mode.max_attempts)
    test_mode.active, test_mode.max_attempts = True, attempts
    try:
        yield
    finally:
        test_mode.active, test_mode.max_attempts = previous


# pytest collects module-level names starting with "test"; this one is a helper.
testing_mode.__test__ = False  # type: ignore[attr-defined]
