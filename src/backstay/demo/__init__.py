"""``backstay demo``: a stormy day at three providers, sat out by one batch.

The demo is data shipped in this package — the suite it runs (``suite.yaml``), the fake
provider's scenario (``scenario.yaml``) and the configuration (``backstay.yaml``) — and
what it is designed to come to (``expected``). ``backstay demo`` starts the fake provider
with the scenario, runs the suite through the engine, and checks the outcome; the same
suite runs against the real providers with ``backstay batch`` (``export`` writes the
files out for that).

* ``files``: ``demo_file(name)``, ``export(folder)``, ``demo_environ(url, key)``;
* ``expected``: ``EXPECTED_ENDS``, ``check_outcome(...)`` (what differs from the design).
"""

from __future__ import annotations

from backstay.demo.expected import (
    EXPECTED_ENDS,
    EXPECTED_FAILURE_KINDS,
    EXPECTED_TASKS,
    ExpectedEnd,
    check_outcome,
)
from backstay.demo.files import (
    CONFIG_FILE,
    DEMO_FILES,
    SCENARIO_FILE,
    SUITE_FILE,
    demo_environ,
    demo_file,
    export,
)

__all__ = [
    "CONFIG_FILE",
    "DEMO_FILES",
    "EXPECTED_ENDS",
    "EXPECTED_FAILURE_KINDS",
    "EXPECTED_TASKS",
    "SCENARIO_FILE",
    "SUITE_FILE",
    "ExpectedEnd",
    "check_outcome",
    "demo_environ",
    "demo_file",
    "export",
]
