"""The pytest plugin ``backstay``: fixtures for tests of code that runs on backstay.

Registered through the ``pytest11`` entry point when backstay is installed (without it,
add ``pytest_plugins = ["backstay.testing.plugin"]`` to a ``conftest.py``). Fixtures:

* ``backstay_clock``: a ``FakeClock`` whose wall time starts at the real current second,
  so resets an agent computes from the real time still lie ahead; sleeps take no time
  and are recorded in ``sleeps``.
* ``backstay_state_dir``: an empty directory for an ``Engine``'s state (in ``tmp_path``).
* ``backstay_testing_mode``: ``testing_mode()`` for the whole test (zero retry delays,
  at most three attempts per call).
* ``backstay_netns``: a started ``NetworkNamespace`` (only loopback inside), closed after
  the test; the test is skipped, with the reason, where namespaces cannot be made.

It also has pytest rewrite the assertions of ``backstay.testing.contract``, so a failed
contract check shows the values it compared.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.register_assert_rewrite("backstay.testing.contract", "backstay.testing._contract_run")

from backstay.testing.fakeclock import FakeClock  # noqa: E402 - after the rewrite hook
from backstay.testing.mode import testing_mode  # noqa: E402
from backstay.testing.netns import NetworkNamespace, unavailable_reason  # noqa: E402

__all__ = ["backstay_clock", "backstay_netns", "backstay_state_dir", "backstay_testing_mode"]


@pytest.fixture
def backstay_clock() -> FakeClock:
    """A ``FakeClock`` starting at the real current second (UTC)."""
    return FakeClock(wall=_dt.datetime.now(_dt.UTC).replace(microsecond=0))


@pytest.fixture
def backstay_state_dir(tmp_path: Path) -> Path:
    """An empty state directory for an ``Engine``."""
    path = tmp_path / "backstay-state"
    path.mkdir()
    return path


@pytest.fixture
def backstay_testing_mode() -> Iterator[None]:
    """Zero retry delays and capped attempts for the whole test."""
    with testing_mode():
        yield


@pytest.fixture
def backstay_netns() -> Iterator[NetworkNamespace]:
    """A private network namespace with only loopback up; skips where none can be made."""
    reason = unavailable_reason()
    if reason is not None:
        pytest.skip(f"no network namespace here: {reason}")
    with NetworkNamespace() as namespace:
        yield namespace
