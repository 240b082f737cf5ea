"""A process that reserves, settles and releases through ``SQLiteSpendLedger`` until it is
killed, for the test that the running sums agree with a full recount after a crash.

Run as ``python spend_crash_child.py STATE_DIR``: at most ``STEPS`` steps of the workload
in ``spend_support``.
"""

from __future__ import annotations

import sys
from typing import Final

from tests.store.sqlite.spend_support import step

from backstay.store.sqlite.spend import SQLiteSpendLedger

STEPS: Final = 200_000


def main(state_dir: str) -> int:
    with SQLiteSpendLedger(state_dir) as ledger:
        for i in range(STEPS):
            step(ledger, i)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
