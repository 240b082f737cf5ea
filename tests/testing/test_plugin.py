"""The pytest plugin's fixtures, as the installed entry point provides them."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from backstay.call._after_failure import test_mode
from backstay.testing import FakeClock


def test_the_clock_fixture_is_a_fake_clock_near_the_real_time(backstay_clock: FakeClock) -> None:
    assert isinstance(backstay_clock, FakeClock)
    assert abs(backstay_clock.now() - dt.datetime.now(dt.UTC)) < dt.timedelta(minutes=1)


def test_the_state_dir_fixture_is_an_empty_directory(backstay_state_dir: Path) -> None:
    assert backstay_state_dir.is_dir()
    assert list(backstay_state_dir.iterdir()) == []


def test_the_testing_mode_fixture_switches_testing_mode_on(backstay_testing_mode: None) -> None:
    assert test_mode.active
