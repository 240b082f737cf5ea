"""Test helpers for backstay's users and for backstay itself (public API).

* ``FakeClock``: a manual clock; ``sleep`` advances it instantly and records the delays.
* ``testing_mode()``: every retry delay becomes zero (no sleep call at all) and attempts
  are capped, so test suites exercise retry paths instantly.
* ``capture_events()``: collect every event emitted inside the block.
* ``ScriptedAdapter``: an in-process adapter whose attempts follow a script of failures,
  successes, hangs and exceptions, recording every dispatch.
* ``backstay.testing.contract``: ``AdapterContract``, the checks every adapter passes, for
  adapter authors to subclass in their own pytest suites (imports pytest; not loaded here).
* ``backstay.testing.plugin``: the pytest plugin (entry point ``backstay``) with the
  fixtures ``backstay_clock``, ``backstay_state_dir`` and ``backstay_testing_mode``.
"""

from __future__ import annotations

from backstay.testing.events import CapturedEvents, capture_events
from backstay.testing.fakeclock import FakeClock

# DEFAULT_TEST_ATTEMPTS stays importable from here, as before the package split.
from backstay.testing.mode import DEFAULT_TEST_ATTEMPTS as DEFAULT_TEST_ATTEMPTS
from backstay.testing.mode import testing_mode
from backstay.testing.scripted import ScriptedAdapter, ScriptedCall

__all__ = [
    "CapturedEvents",
    "FakeClock",
    "ScriptedAdapter",
    "ScriptedCall",
    "capture_events",
    "testing_mode",
]
