"""Fallback through a provider outage: a steady batch whose primary (Anthropic Messages,
``claude-sonnet-4-6``) is down for the middle half of the batch — 30 s of 60 — while the
fallback (OpenAI Chat Completions, ``gpt-5``) stays healthy, through two clients with the
same fallback, in the same run:

* ``backstay``: a ``FallbackChain`` of the two candidates, each with its own breaker,
  calling the official anthropic and openai SDK clients with their own retries off;
* ``litellm``: ``litellm.Router`` with the same two deployments and
  ``fallbacks=[{"primary": ["fallback"]}]``, the same number of retries, a cooldown as long
  as backstay's breaker stays open, and ``allowed_fails`` one below backstay's failure
  threshold (litellm cools down on the failure *after* the allowed ones).

Both use the same backoff (0.5 s doubling, at most 8 s), the same per-request timeout and
the same workload: WORKERS workers starting RATE_PER_S calls a second on a fixed schedule,
so that with a healthy primary the batch lasts its duration. The outage is the fake
provider's ``overloaded`` fault on the Anthropic API (529 ``overloaded_error``: how an
Anthropic incident looks to its clients) from 25 % to 75 % of the duration; ``--fault``
plays another (``unavailable``: 503, ``server_error``: 500, ``reset``: every connection
reset before an answer). Each client
runs in its own process with a fresh fake provider in another; everything is loopback
(the client process refuses, and counts, any connection elsewhere).

Figures, from the fake provider's own request log and the callers' results:

* completion: from the first scheduled call to the last call's end (the ideal is the
  duration);
* failed: calls whose caller saw an error;
* p99 call, slowest: how long a call took, as its caller saw it (retries and backoff
  before a fallback show here); p99 ok: the same for the calls started before the outage,
  the client's own cost on this machine;
* requests: every request the provider received;
* down: requests to the primary inside the outage window (each got the fault);
* wasted: down beyond the ones neither client, as configured, can avoid: FAILURE_THRESHOLD
  failures to detect the outage (backstay's breaker threshold; litellm's
  ``allowed_fails + 1``), then one probe as each cooldown that starts inside the outage
  ends (the least a client sends to notice the primary is back as soon as it is);
* fallback: calls the fallback answered (its 200s in the log);
* back on A: from the end of the outage to the primary's first 200 after it.

Run alone with ``.venv/bin/python bench/fallback.py [--duration-s 60] [--fault KIND]``, or in
``make bench``. Without litellm installed (``pip install -e '.[bench]'``) only backstay's
row is printed, and the section says so.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Final

import fallback_batch
import fallback_clients
from fallback_batch import (
    DURATION_S,
    FAILURE_THRESHOLD,
    FALLBACK,
    FAULT,
    FAULTS,
    PRIMARY,
    RETRIES,
    WORKERS,
    Result,
    Scenario,
)

CLIENTS: Final = tuple(fallback_clients.PREPARE)  # backstay first: ratios are backstay / peer
CHILD_TIMEOUT_S: Final = 900.0  # above the batch's own timeout (fallback_batch)
HERE: Final = Path(__file__).resolve()


def measure(client: str, scenario: Scenario) -> Result:
    """Run ``client``'s batch in a fresh process (with its own fake provider)."""
    with tempfile.TemporaryDirectory(prefix="backstay-bench-fallback-") as tmp:
        out = Path(tmp) / "result.json"
        env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        command = [sys.executable, str(HERE), "--client", client, "--out", str(out)]
        command += ["--duration-s", f"{scenario.duration_s:g}", "--fault", scenario.fault]
        completed = subprocess.run(  # noqa: S603 - this file, our own arguments
            command,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            timeout=CHILD_TIMEOUT_S,
            check=False,
        )
        if completed.returncode != 0 or not out.exists():
            raise RuntimeError(
                f"the {client} batch failed (exit {completed.returncode}): "
                f"{completed.stderr.strip()[-2000:]}"
            )
        return Result(**json.loads(out.read_text(encoding="utf-8")))


def litellm_installed() -> bool:
    return importlib.util.find_spec("litellm") is not None


def _ratio(ours: float | None, theirs: float | None) -> str:
    if ours is None or theirs is None:
        return "n/a"
    if theirs == 0:
        return "n/a (peer 0)" if ours else "1.00x (both 0)"
    return f"{ours / theirs:.2f}x"


def _row(result: Result, scenario: Scenario) -> None:
    back = "never" if result.back_on_primary_s is None else f"{result.back_on_primary_s:.2f} s"
    print(
        f"  {result.client:<9} {result.completion_s:7.2f} s "
        f"{result.completion_s / scenario.duration_s:5.2f}x {result.failed:6d} "
        f"{result.p99_before_s:6.2f} s {result.p99_call_s:7.2f} s {result.slowest_call_s:6.2f} s "
        f"{result.requests:8d} "
        f"{result.down_requests:5d} {result.wasted:6d} {result.fallback_served:8d} {back:>9}"
    )


def report(duration_s: float = DURATION_S, fault: str = FAULT) -> list[Result]:
    """Print the fallback section; the results, backstay's first."""
    scenario = Scenario(duration_s=duration_s, fault=fault)
    print(
        f"\n== Fallback through an outage: {scenario.calls} calls by {WORKERS} workers over "
        f"{scenario.duration_s:g} s; the primary ({PRIMARY[1]}, Anthropic API) fails "
        f"({scenario.fault}) from {scenario.outage_start_s:g} s to "
        f"{scenario.outage_end_s:g} s, the fallback ({FALLBACK[1]}, OpenAI API) is healthy; "
        f"{RETRIES} retries, breaker open / cooldown "
        f"{scenario.cooldown_s:g} s; each client in its own process, one run each =="
    )
    clients = CLIENTS if litellm_installed() else CLIENTS[:1]
    results = [measure(client, scenario) for client in clients]
    print(
        f"  {'client':<9} {'completion':>9} {'/ideal':>6} {'failed':>6} {'p99 ok':>8} "
        f"{'p99 call':>9} {'slowest':>8} {'requests':>8} {'down':>5} {'wasted':>6} {'fallback':>8} "
        f"{'back on A':>9}"
    )
    for result in results:
        _row(result, scenario)
    print(
        "  down: requests to the primary during the outage; wasted: down beyond "
        f"{scenario.allowance} ({FAILURE_THRESHOLD} to detect it, then one probe per "
        "cooldown); p99 ok: p99 call before the outage; fallback: calls the fallback answered; "
        "back on A: from the outage's end to the primary's first answer"
    )
    outside = sum(r.outside_connections for r in results)
    if outside:
        print(f"  WARNING: {outside} connection(s) to addresses other than loopback refused")
    if len(results) < len(CLIENTS):
        print("  litellm is not installed (pip install -e '.[bench]'): backstay's row only")
        return results
    ours, theirs = results
    print(
        "  backstay / litellm: completion "
        f"{_ratio(ours.completion_s, theirs.completion_s)}, p99 call "
        f"{_ratio(ours.p99_call_s, theirs.p99_call_s)}, wasted "
        f"{_ratio(ours.wasted, theirs.wasted)}, sent to the down primary "
        f"{_ratio(ours.down_requests, theirs.down_requests)}, failed calls "
        f"{_ratio(ours.failed, theirs.failed)}, back on the primary "
        f"{_ratio(ours.back_on_primary_s, theirs.back_on_primary_s)}"
    )
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--duration-s", type=float, default=DURATION_S, help="the batch's length")
    parser.add_argument("--fault", choices=sorted(FAULTS), default=FAULT, help="the outage")
    parser.add_argument("--client", choices=CLIENTS, help="run one client's batch (a child)")
    parser.add_argument("--out", type=Path, help="where the child writes its result")
    args = parser.parse_args(argv)
    if args.duration_s <= 0:
        parser.error("--duration-s must be > 0")
    if args.client is None:
        report(args.duration_s, args.fault)
        return
    if args.out is None:
        parser.error("--client needs --out")
    refused = fallback_batch.loopback_only()  # before the client library is imported
    prepare = fallback_clients.PREPARE[args.client]()
    scenario = Scenario(duration_s=args.duration_s, fault=args.fault)
    result = fallback_batch.run(args.client, prepare, scenario, refused)
    args.out.write_text(json.dumps(dataclasses.asdict(result)), encoding="utf-8")


if __name__ == "__main__":
    main()
