"""One client's batch for ``bench/fallback.py``, run in a process of its own: the scenario,
the paced workload, and the figures read from the fake provider's request log."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import socket
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Final

import provider_process

DURATION_S: Final = 60.0
OUTAGE_FROM: Final = 0.25  # of the duration
OUTAGE_UNTIL: Final = 0.75
COOLDOWN_SHARE: Final = 5.0 / 60.0  # litellm's default cooldown (5 s) at the full duration
WORKERS: Final = 8
RATE_PER_S: Final = 10.0
RETRIES: Final = 2  # after the first attempt
FAILURE_THRESHOLD: Final = 3  # consecutive failures that open backstay's breaker
INITIAL_DELAY_S: Final = 0.5  # litellm's INITIAL_RETRY_DELAY
MAX_DELAY_S: Final = 8.0  # litellm's MAX_RETRY_DELAY
REQUEST_TIMEOUT_S: Final = 10.0
PRIMARY: Final = ("anthropic", "claude-sonnet-4-6")
FALLBACK: Final = ("openai", "gpt-5")
# The outages the bench can play, as ``--fault`` takes them: the fake provider's fault and
# its options. ``overloaded`` (529 ``overloaded_error``) is how an Anthropic incident looks
# to its clients; ``reset`` drops each connection before any answer (a provider whose
# front end is gone).
FAULTS: Final = {
    "overloaded": "overloaded",
    "unavailable": "unavailable",
    "server_error": "server_error",
    "reset": "reset:after_events=0",
}
FAULT: Final = "overloaded"
API_KEY: Final = "sk-bench-fallback-0000000000"
PROMPT: Final = "Summarise the outage report in one line."
MAX_TOKENS: Final = 16
BATCH_TIMEOUT_S: Final = 600.0


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Scenario:
    """The batch and the outage, in seconds from the provider's start."""

    duration_s: float
    fault: str = FAULT

    @property
    def outage_start_s(self) -> float:
        return self.duration_s * OUTAGE_FROM

    @property
    def outage_end_s(self) -> float:
        return self.duration_s * OUTAGE_UNTIL

    @property
    def outage_s(self) -> float:
        return self.outage_end_s - self.outage_start_s

    @property
    def cooldown_s(self) -> float:
        return self.duration_s * COOLDOWN_SHARE

    @property
    def calls(self) -> int:
        return max(WORKERS, round(self.duration_s * RATE_PER_S))

    @property
    def allowance(self) -> int:
        """Requests to the down primary that neither client, as configured, can avoid: the
        FAILURE_THRESHOLD failures that detect the outage, then one probe at the end of each
        cooldown that starts inside it."""
        return FAILURE_THRESHOLD + math.ceil(self.outage_s / self.cooldown_s) - 1

    def fault_flag(self) -> str:
        """The outage, as ``backstay fake-provider serve --fault`` takes it."""
        return (
            f"{FAULTS[self.fault]}:api={PRIMARY[0]}:start_s={self.outage_start_s:g}"
            f":outage_s={self.outage_s:g}"
        )


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Result:
    """One client's batch, as its process reports it."""

    client: str
    completion_s: float
    succeeded: int
    failed: int
    p99_call_s: float
    p99_before_s: float
    slowest_call_s: float
    requests: int
    down_requests: int
    wasted: int
    fallback_served: int
    primary_served: int
    back_on_primary_s: float | None
    outside_connections: int


@dataclasses.dataclass(frozen=True, slots=True)
class Call:
    """One call of the batch: wall-clock start and end; the provider that answered, or
    ``None`` when the caller saw an error."""

    start: float
    end: float
    served_by: str | None


# A client: built once the provider listens (its URL, the scenario); one call returns the
# provider that answered; then closed.
Client = tuple[Callable[[], Awaitable[str]], Callable[[], Awaitable[None]]]
Prepare = Callable[[str, Scenario], Client]


# ---- nothing leaves the machine --------------------------------------------------------


def _loopback(host: object) -> bool:
    text = host.decode() if isinstance(host, bytes) else str(host)
    return text.startswith("127.") or text in {"::1", "localhost"}


def loopback_only() -> list[str]:
    """Refuse, and record, every connection and name lookup to anything but loopback in
    this process (threads included). Call before importing the client library."""
    refused: list[str] = []
    connect, connect_ex, getaddrinfo = (
        socket.socket.connect,
        socket.socket.connect_ex,
        socket.getaddrinfo,
    )

    def _check(address: Any) -> None:
        if isinstance(address, tuple) and not _loopback(address[0]):
            refused.append(str(address[0]))
            raise ConnectionRefusedError(f"bench: no traffic beyond loopback ({address[0]})")

    def guarded_connect(self: socket.socket, address: Any) -> None:
        _check(address)
        connect(self, address)

    def guarded_connect_ex(self: socket.socket, address: Any) -> int:
        _check(address)
        return connect_ex(self, address)

    def guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host is not None:
            _check((host,))
        return getaddrinfo(host, *args, **kwargs)

    socket.socket.connect = guarded_connect  # type: ignore[method-assign]
    socket.socket.connect_ex = guarded_connect_ex  # type: ignore[method-assign]
    socket.getaddrinfo = guarded_getaddrinfo
    return refused


# ---- the batch ---------------------------------------------------------------------------


async def _batch(client: Client, scenario: Scenario, started: float) -> list[Call]:
    """WORKERS workers; call *i* is due ``i / RATE_PER_S`` after ``started`` (a late worker
    starts its next call at once)."""
    call, close = client
    calls: list[Call] = []

    async def worker(first: int) -> None:
        for index in range(first, scenario.calls, WORKERS):
            delay = started + index / RATE_PER_S - time.time()
            if delay > 0:
                await asyncio.sleep(delay)
            begin = time.time()
            try:
                served_by: str | None = await call()
            except Exception:  # noqa: BLE001 - the caller saw an error: that is the figure
                served_by = None
            calls.append(Call(begin, time.time(), served_by))

    try:
        async with asyncio.timeout(BATCH_TIMEOUT_S):
            await asyncio.gather(*(worker(w) for w in range(WORKERS)))
    finally:
        await close()
    return calls


def _p99(ordered: list[float]) -> float:
    return ordered[min(len(ordered) - 1, math.ceil(0.99 * len(ordered)) - 1)]


def _result(
    client: str,
    scenario: Scenario,
    *,
    started: float,
    calls: list[Call],
    log: list[dict[str, Any]],
    refused: list[str],
) -> Result:
    primary = [entry for entry in log if entry["api"] == PRIMARY[0]]
    down = [entry for entry in primary if entry["fault"] == scenario.fault]
    outage_start = started + scenario.outage_start_s
    back = [e["time"] for e in primary if e["status"] == 200 and e["time"] >= outage_start]
    outage_end = started + scenario.outage_end_s
    durations = sorted(c.end - c.start for c in calls)
    before = sorted(c.end - c.start for c in calls if c.start < outage_start) or [0.0]
    return Result(
        client=client,
        completion_s=max(c.end for c in calls) - started,
        succeeded=sum(c.served_by is not None for c in calls),
        failed=sum(c.served_by is None for c in calls),
        p99_call_s=_p99(durations),
        p99_before_s=_p99(before),
        slowest_call_s=durations[-1],
        requests=len(log),
        down_requests=len(down),
        wasted=max(0, len(down) - scenario.allowance),
        fallback_served=sum(
            e["api"] != PRIMARY[0] and e["status"] == 200 and e["model"] == FALLBACK[1] for e in log
        ),
        primary_served=sum(e["status"] == 200 for e in primary),
        back_on_primary_s=max(0.0, min(back) - outage_end) if back else None,
        outside_connections=len(refused),
    )


async def _warm_up(client: Client) -> None:
    call, close = client
    try:
        await call()
    finally:
        await close()


def run(client: str, prepare: Prepare, scenario: Scenario, refused: list[str]) -> Result:
    """The batch against a fresh fake provider with the outage; the figures.

    First one call through a client of its own against a provider whose primary always
    fails, so that what a library loads on its first call (and on its first fallback) is
    not counted in the batch; the batch's client, breakers and cooldowns are new."""
    with provider_process.serve("--fault", f"{FAULTS[scenario.fault]}:api={PRIMARY[0]}") as url:
        asyncio.run(_warm_up(prepare(url, scenario)))
    with tempfile.TemporaryDirectory(prefix="backstay-bench-fallback-") as tmp:
        log_path = Path(tmp) / "requests.jsonl"
        flags = ("--fault", scenario.fault_flag(), "--log", str(log_path))
        with provider_process.serve(*flags) as url:
            started = time.time()
            calls = asyncio.run(_batch(prepare(url, scenario), scenario, started))
        lines = log_path.read_text(encoding="utf-8").splitlines()
    log = [json.loads(line) for line in lines if line.strip()]
    return _result(client, scenario, started=started, calls=calls, log=log, refused=refused)
