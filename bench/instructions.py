"""Instruction counts (valgrind's callgrind) for the retry figures, sync and async: a
repeatable supplement to the timings, which move with whatever else the machine runs.

One process under callgrind builds every contender as ``retry.py`` does, then runs each
statement in a loop inside ``exec``; collection is on only inside ``exec`` and each ``exec``
is dumped on its own, so every loop gets its own count. Each statement's count is
(its loop − an empty loop of the same length) / iterations, after one warm-up loop. Per
retry = (the call that fails twice − the call that succeeds) / 2, as in the timings.
Skipped, with a line saying so, when valgrind is not installed.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from retry import ATTEMPTS, PEERS, Row, print_table, ratio

N = 400
HERE = Path(__file__).parent

_CHILD = """
import sys
sys.path.insert(0, {here!r})
import retry
from retry import Flaky, no_sleep, ok, _sync_candidates, quiet_stamina
import backstay
quiet_stamina()
ConnectionError_ = ConnectionError("[Errno 104] Connection reset by peer")
jobs = []
for scenario, fn in (("ok", ok), ("flaky", Flaky())):
    for name, (stmt, env) in _sync_candidates(fn).items():
        if scenario == "flaky" and name == "bare call":
            continue  # it does not retry
        jobs.append((scenario, name, stmt, env))
jobs.append(("classify", "classify(ConnectionError)", "c(e)",
             {{"c": backstay.classify, "e": ConnectionError_}}))
import asyncio
from async_retry import AFlaky, aok, _async_candidates
runner = asyncio.Runner()
for scenario, fn in (("aok", aok), ("aflaky", AFlaky())):
    for name, (expr, env) in _async_candidates(fn).items():
        if scenario == "aflaky" and name == "bare await":
            continue
        namespace = dict(env)
        exec(f"async def _once():\\n    return await {{expr}}\\n", namespace)
        jobs.append((scenario, name, "run(once())",
                     {{"run": runner.run, "once": namespace["_once"]}}))
empty = compile("for _ in range({n}):\\n    pass\\n", "empty", "exec")
print("JOBS", len(jobs), flush=True)
with no_sleep():
    for scenario, name, stmt, env in jobs:
        loop = compile(f"for _ in range({n}):\\n    {{stmt}}\\n", "loop", "exec")
        exec(loop, env)   # warm-up
        exec(empty, env)  # the loop alone
        exec(loop, env)   # measured
        print("JOB", scenario, name, flush=True)
"""


def _counts(out_dir: Path) -> list[int]:
    files = sorted(out_dir.glob("cg.out.*"), key=lambda p: int(p.name.rsplit(".", 1)[1]))
    counts = []
    for path in files:
        found = re.search(r"^summary: (\d+)", path.read_text(errors="replace"), re.M)
        counts.append(int(found.group(1)) if found else 0)
    return counts


def measure() -> dict[tuple[str, str], float] | None:
    """Instructions per execution of each (scenario, contender), or ``None`` without
    valgrind."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        out_dir = Path(tmp)
        script = out_dir / "child.py"
        script.write_text(_CHILD.format(here=str(HERE), n=N))
        proc = subprocess.run(  # noqa: S603 - valgrind on our own script
            [
                valgrind,
                "--tool=callgrind",
                "--collect-atstart=no",
                "--toggle-collect=builtin_exec",
                "--dump-after=builtin_exec",
                f"--callgrind-out-file={out_dir}/cg.out",
                sys.executable,
                str(script),
            ],
            capture_output=True,
            text=True,
            check=True,
            timeout=1800,
        )
        jobs = [
            line.split(" ", 2)[1:] for line in proc.stdout.splitlines() if line.startswith("JOB ")
        ]
        counts = _counts(out_dir)
    measured = counts[-3 * len(jobs) :]  # earlier dumps are exec calls made while importing
    out: dict[tuple[str, str], float] = {}
    for i, (scenario, name) in enumerate(jobs):
        _warm, empty, loop = measured[3 * i : 3 * i + 3]
        out[(scenario, name)] = (loop - empty) / N
    return out


def _rows(counts: dict[tuple[str, str], float], ok: str, flaky: str, bare: str) -> list[Row]:
    """Success overhead and per retry of every contender of one side (sync or async)."""
    base = counts[(ok, bare)]
    rows = []
    per_retry = {}
    for name in [name for scenario, name in counts if scenario == ok]:
        note = ""
        if (flaky, name) in counts:
            per_retry[name] = (counts[(flaky, name)] - counts[(ok, name)]) / (ATTEMPTS - 1)
            note = f"per retry {per_retry[name]:9.0f}"
        rows.append(Row(f"{name}: success overhead", counts[(ok, name)] - base, unit="", note=note))
    ours_ok = counts[(ok, "backstay @retry")] - base
    rows.extend(
        Row(
            f"  per retry, backstay @retry / {peer}",
            per_retry["backstay @retry"] / per_retry[peer],
            unit="x",
            note=f"success overhead {ratio(ours_ok, counts[(ok, peer)] - base)}",
        )
        for peer in PEERS
    )
    return rows


def report() -> None:
    print("\n== Instructions per call (callgrind; repeatable where timings are not) ==")
    counts = measure()
    if counts is None:
        print("  valgrind is not installed: instruction counts skipped")
        return
    rows = _rows(counts, "ok", "flaky", "bare call")
    rows.append(
        Row(
            "classify(ConnectionError), remembered",
            counts[("classify", "classify(ConnectionError)")],
            unit="",
        )
    )
    print_table(f"Instructions, sync (loop of {N}, minus an empty loop; per call)", rows)
    print_table(
        "Instructions, async (each await run to completion by one asyncio.Runner; the "
        "runner's own cost cancels out of both figures)",
        _rows(counts, "aok", "aflaky", "bare await"),
    )
