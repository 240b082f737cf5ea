"""Reading a large batch (issue 24): the CPU time of the commands a person runs on a batch
of 10,000 or 100,000 tasks — ``status``, ``status --json``, ``health --json``, ``report`` —
each a fresh process timed by its own CPU time (GNU ``time``), the least of ``ROUNDS``.

In ``make bench`` the batches are those ``scale.py`` leaves (SQLite and Redis). Run alone,
``python bench/status.py [SIZE ...]`` records batches of those sizes through the stores'
own API (``batch_states.py``: a mix with failed, paused, escalated and interrupted tasks)
on SQLite and, when ``redis-server`` is installed, on Redis, and times the commands on
them (``--only report``, repeatable: those commands alone). Targets: ``health --json``
≤ 0.3 s at any size; ``status`` ≤ 0.6 s at 10,000 tasks and ≤ 1 s at 100,000; ``report``
≤ 3 s at 100,000; ``status --json`` streams (its peak memory is printed: flat).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Final

ROUNDS: Final = 3
_SCRIPT = Path(sys.executable).with_name("backstay")
BACKSTAY: Final = str(_SCRIPT) if _SCRIPT.exists() else (shutil.which("backstay") or "backstay")
TIME: Final = shutil.which("time") or "/usr/bin/time"  # GNU time
# (command, its arguments after the batch's flags, target CPU s by batch size or None)
COMMANDS: Final = (
    ("status", [], {10_000: 0.6, 100_000: 1.0}),
    ("status --json", ["--json"], None),
    ("health --json", ["--json"], {10_000: 0.3, 100_000: 0.3}),
    ("report", ["-o", "REPORT"], {100_000: 3.0}),
)


def cpu_and_memory(argv: list[str]) -> tuple[float, float]:
    """The CPU seconds (user + system) and peak memory (MB) of one run of ``argv``, as
    GNU ``time`` reports them: a child of this process would inherit its peak memory
    (Linux counts the parent's pages in a new child's ``ru_maxrss``), ``time``'s own
    child does not."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as out:
        child = subprocess.run(  # noqa: S603 - GNU time and our own command
            [TIME, "-f", "%U %S %M", "-o", out.name, *argv],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env={**os.environ, "COLUMNS": "120"}, check=False,
        )  # fmt: skip
        if child.returncode not in (0, 1):  # health says 1 when its store takes no write
            raise RuntimeError(f"{' '.join(argv)} exited with {child.returncode}")
        user, system, peak_kb = out.read().split()[-3:]
    return float(user) + float(system), int(peak_kb) / 1024


def _has_store_flag(command: str) -> bool:
    shown = subprocess.run(  # noqa: S603
        [BACKSTAY, command, "--help"], capture_output=True, text=True, check=False
    )
    return "--store" in shown.stdout


def report(
    batches: dict[str, tuple[Path, str | None]], *, only: frozenset[str] | None = None
) -> None:
    """Time each command (those named in ``only``: every one with ``None``) on each batch
    (``label → (state_dir, redis_url or None)``)."""
    print(f"\n== Reading a large batch (CPU s of a fresh process, least of {ROUNDS}) ==")
    out = Path(tempfile.mkdtemp(prefix="backstay-bench-report-"))
    health_store = _has_store_flag("health")
    try:
        for label, (state, url) in batches.items():
            size = int(label.split()[-1].replace(",", ""))
            for name, extra, targets in COMMANDS:
                if only is not None and name not in only:
                    continue
                if url is not None and name.startswith("health") and not health_store:
                    continue
                words = name.split()[:1]
                args = [a if a != "REPORT" else str(out / "report.html") for a in extra]
                flags = ["--state-dir", str(state)] + (["--store", url] if url else [])
                runs = [cpu_and_memory([BACKSTAY, *words, *flags, *args]) for _ in range(ROUNDS)]
                cpu, peak = min(r[0] for r in runs), max(r[1] for r in runs)
                target = (targets or {}).get(size)
                verdict = "" if target is None else (
                    f"target ≤ {target:g} s: {'met' if cpu <= target else 'missed'}"
                )  # fmt: skip
                print(f"  {label:<14} {name:<15} {cpu:6.2f} s CPU  peak {peak:5.0f} MB  {verdict}",
                      flush=True)  # fmt: skip
    finally:
        shutil.rmtree(out, ignore_errors=True)


def _alone(sizes: list[int], only: frozenset[str] | None = None) -> None:
    import batch_states  # noqa: PLC0415 - only when run alone
    from backstay.store.location import parse_store  # noqa: PLC0415
    from backstay.store.redis._client import RedisConnection  # noqa: PLC0415
    from backstay.store.redis.tasks import RedisTaskStore  # noqa: PLC0415
    from backstay.store.sqlite.circuit_log import SQLiteCircuitLog  # noqa: PLC0415
    from backstay.store.sqlite.operations import SQLiteOperationStore  # noqa: PLC0415
    from backstay.store.sqlite.tasks import STATE_FILE, SQLiteTaskStore  # noqa: PLC0415
    from shared_state import redis_server  # noqa: PLC0415

    root = Path(tempfile.mkdtemp(prefix="backstay-bench-status-"))
    batches: dict[str, tuple[Path, str | None]] = {}
    try:
        for n in sizes:
            with SQLiteTaskStore(root / f"sqlite{n}") as store:
                batch_states.fill(store, n, root)
            # The operation store and circuit log a batch's engine opens beside the tasks.
            SQLiteOperationStore(root / f"sqlite{n}" / STATE_FILE).close()
            SQLiteCircuitLog(root / f"sqlite{n}").close()
            batches[f"sqlite {n:,}"] = (root / f"sqlite{n}", None)
        if shutil.which("redis-server") is None:
            report(batches, only=only)
            return
        with redis_server() as url:
            for n in sizes:
                ns = f"{url}?namespace=read{n}"
                conn = RedisConnection(parse_store(ns))
                batch_states.fill(RedisTaskStore(conn), n, root)
                conn.close()
                batches[f"redis {n:,}"] = (root / f"redis{n}", ns)
            report(batches, only=only)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _main(argv: list[str]) -> None:
    """``[--only COMMAND]... [SIZE ...]``: ``--only report`` times ``report`` alone."""
    only: set[str] = set()
    sizes: list[int] = []
    words = iter(argv)
    for word in words:
        if word in {"-h", "--help"}:
            print(__doc__)
            print("usage: status.py [--only COMMAND]... [SIZE ...]  (default sizes 10000 100000)")
            return
        if word == "--only":
            only.add(next(words))
        else:
            try:
                sizes.append(int(word))
            except ValueError:
                raise SystemExit(f"not a batch size: {word!r} (see --help)") from None
    unknown = only - {name for name, _, _ in COMMANDS}
    if unknown:
        raise SystemExit(f"--only: no command {', '.join(sorted(unknown))}")
    _alone(sizes or [10_000, 100_000], frozenset(only) or None)


if __name__ == "__main__":
    _main(sys.argv[1:])
