"""The gateway (``backstay gateway``) beside litellm's proxy: the same fake provider (its own
process), the same load (this process, aiohttp; the throughput from ``http_load``'s own
process), each proxy one process of its own.

1. Added latency at 200 requests/s: 2,000 non-streaming Chat Completions sent open-loop
   (one every 5 ms, whatever the answers do) straight to the fake provider, through the
   gateway and through litellm; the added latency is each proxy's p50 / p99 less the
   direct ones. The direct and the gateway's requests go in ten alternating blocks of 200,
   so that a machine whose load drifts (one shared with other work) weighs on both alike;
   litellm's run is one block (its queue grows for the whole run). The same added latency
   without a scheduler between processes (on a machine shared with other work, each hop
   between processes may wait for a core): the fake provider and a gateway on threads of
   the bench's process, one request at a time.
2. Throughput: non-streaming requests/s through one proxy process, 64 in flight, against
   the fake provider (itself one process, so its own rate is the ceiling: printed too),
   sent by a lean load generator in a process of its own (``http_load``: raw keep-alive
   connections, about a tenth of an aiohttp client's CPU per request), so that the three
   processes' CPU is mostly the servers'; and the proxy's CPU time per request, which a
   machine shared with other work does not distort as it does the rate: 1,000 / (CPU ms
   per request) is what one free core would carry.
3. Memory: the proxy's resident set (its process tree) idle and with 1,000 concurrent
   streams open (the fake provider sends each stream's first events, then holds it).
4. A fleet: two gateways on one ``redis-server`` (``--store redis://``), a provider
   limited to R requests a minute whose bucket is used up first, M requests split across
   both; the wall time (first to last request at the provider) against M / R, and the
   429s. The gateways learn the limit from the provider's headers. First the same setup
   against an unlimited provider: the requests/s the machine carries now, without which a
   ratio above 1 cannot be told from a machine too busy to reach R.
5. What a Redis store costs a request: the same gateway with its limiters and breakers in
   its process and on a ``redis-server`` (whose calls the gateway makes on its event
   loop): the Redis commands a request, the added latency and the throughput and CPU.

litellm runs from ``LITELLM_BIN`` (default: ``litellm`` next to this Python, else
``$HOME/.cache/backstay/litellm-venv/bin/litellm``) with ``LITELLM_LOCAL_MODEL_COST_MAP``
so it fetches nothing; without it the litellm rows are left out and said so. Targets
(docs/gateway.md): added p50 <= 1 ms, p99 <= 5 ms at 200/s; >= 1,500 requests/s; 1,000
streams in <= 150 MB.

Run alone with ``.venv/bin/python bench/gateway.py``, or in ``make bench``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import httpx
from aiohttp import ClientSession, ClientTimeout, TCPConnector

import http_load
import provider_process
import shared_state

LATENCY_RATE: Final = 200.0
LATENCY_REQUESTS: Final = 2_000
# The gateway's latency rows and the direct ones are sent in this many alternating blocks.
LATENCY_BLOCKS: Final = 10
SEQUENTIAL: Final = 1_000
SEQUENTIAL_WARMUP: Final = 100
WARMUP: Final = 200
THROUGHPUT_REQUESTS: Final = 10_000
# litellm's proxy carries 20 to 100 times fewer a second: fewer requests measure it as well.
LITELLM_THROUGHPUT_REQUESTS: Final = 2_000
CONCURRENCY: Final = 64
STREAMS: Final = 1_000
# The requests the Redis commands of one are counted over (one at a time).
STORE_COUNTED: Final = 200
FLEET_RPM: Final = 1_200
FLEET_REQUESTS: Final = 300
FLEET_THREADS: Final = 16
START_TIMEOUT_S: Final = 120.0
STOP_TIMEOUT_S: Final = 30.0
LOAD_TIMEOUT_S: Final = 300.0
TARGET_P50_MS: Final = 1.0
TARGET_P99_MS: Final = 5.0
TARGET_RPS: Final = 1_500.0
TARGET_RSS_MB: Final = 150.0
TARGET_FLEET_RATIO: Final = 1.1
MODEL: Final = "gpt-5"
KEY: Final = "sk-bench-0000000000000000"
LITELLM_MASTER: Final = "sk-bench-master-0123456789abcdef"
CHAT: Final = {"model": MODEL, "messages": [{"role": "user", "content": "Say hello."}]}
STREAM_CHAT: Final = {**CHAT, "stream": True}
MAIN: Final = "from backstay.cli import main; main()"


# ---- processes ---------------------------------------------------------------------------


def _stop(process: subprocess.Popen[Any]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(STOP_TIMEOUT_S)


@contextlib.contextmanager
def gateway(upstream: str, *flags: str) -> Iterator[tuple[str, int]]:
    """``backstay gateway`` in a child process: its URL and PID."""
    argv = [sys.executable, "-c", MAIN, "gateway", "--port", "0", "--upstream", upstream, *flags]
    process = subprocess.Popen(  # noqa: S603 - our own CLI, our own arguments
        argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if "listening on" not in line:
            raise RuntimeError(f"the gateway did not start: {line!r}")
        yield line.rsplit(" ", 1)[-1].strip(), process.pid
    finally:
        _stop(process)


def litellm_bin() -> str | None:
    """The litellm command, or ``None`` when it is not installed."""
    candidates = [
        os.environ.get("LITELLM_BIN", ""),
        str(Path(sys.executable).with_name("litellm")),
        str(Path.home() / ".cache" / "backstay" / "litellm-venv" / "bin" / "litellm"),
    ]
    return next((c for c in candidates if c and Path(c).is_file()), None)


@contextlib.contextmanager
def litellm(binary: str, upstream: str) -> Iterator[tuple[str, int]]:
    """litellm's proxy (one worker) in front of ``upstream`` for MODEL: its URL and PID."""
    port = shared_state._free_port()
    with tempfile.TemporaryDirectory(prefix="backstay-bench-litellm-") as directory:
        config = Path(directory) / "config.yaml"
        config.write_text(
            json.dumps(
                {
                    "model_list": [
                        {
                            "model_name": MODEL,
                            "litellm_params": {
                                "model": f"openai/{MODEL}",
                                "api_base": upstream + "/v1",
                                "api_key": KEY,
                            },
                        }
                    ],
                    "litellm_settings": {"num_retries": 0, "telemetry": False},
                    "general_settings": {"master_key": LITELLM_MASTER},
                }
            ),
            encoding="utf-8",
        )
        env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_TELEMETRY": "False"}
        argv = [binary, "--config", str(config), "--host", "127.0.0.1", "--port", str(port)]
        process = subprocess.Popen(  # noqa: S603 - the installed peer, our arguments
            [*argv, "--num_workers", "1"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=directory,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + START_TIMEOUT_S
            while True:
                if process.poll() is not None:
                    raise RuntimeError("litellm's proxy exited at start")
                with contextlib.suppress(httpx.HTTPError):
                    if httpx.get(url + "/health/liveliness", timeout=2.0).status_code == 200:
                        break
                if time.monotonic() > deadline:
                    raise RuntimeError("litellm's proxy did not start")
                time.sleep(0.5)
            yield url, process.pid
        finally:
            _stop(process)


def rss_mb(pid: int) -> float:
    """The resident set of ``pid`` and its descendants, in MB."""
    total_kb = 0
    for each in [pid, *_descendants(pid)]:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{each}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total_kb += int(line.split()[1])
    return total_kb / 1024


def cpu_s(pid: int) -> float:
    """CPU seconds (user and system) ``pid`` and its descendants have used."""
    ticks = 0
    for each in [pid, *_descendants(pid)]:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{each}/stat").read_text().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def _descendants(pid: int) -> list[int]:
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            children = (task / "children").read_text().split()
            for child in map(int, children):
                found += [child, *_descendants(child)]
    return found


# ---- load --------------------------------------------------------------------------------


def _headers(url_kind: str) -> dict[str, str]:
    key = LITELLM_MASTER if url_kind == "litellm" else KEY
    return {"authorization": f"Bearer {key}", "content-type": "application/json"}


async def _post(session: ClientSession, url: str, headers: dict[str, str], body: bytes) -> float:
    started = time.perf_counter()
    async with session.post(url, data=body, headers=headers) as answer:
        await answer.read()
        if answer.status != 200:
            raise RuntimeError(f"{url} answered {answer.status}")
    return time.perf_counter() - started


async def open_loop(base: str, kind: str, rate: float, count: int) -> list[float]:
    """``count`` requests started one every ``1 / rate`` seconds; their latencies (s)."""
    url, headers, body = base + "/v1/chat/completions", _headers(kind), json.dumps(CHAT).encode()
    timeout = ClientTimeout(total=LOAD_TIMEOUT_S)
    async with ClientSession(connector=TCPConnector(limit=0), timeout=timeout) as session:
        for _ in range(WARMUP // 10):
            await _post(session, url, headers, body)
        loop = asyncio.get_running_loop()
        start = loop.time()
        tasks = []
        for i in range(count):
            delay = start + i / rate - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(_post(session, url, headers, body)))
        return list(await asyncio.gather(*tasks))


def paired_open_loop(
    direct: str, via: str, rate: float, count: int, blocks: int
) -> tuple[list[float], list[float]]:
    """Open-loop latencies (s) straight to the provider at ``direct`` and through the
    gateway at ``via``, ``count`` each, in ``blocks`` alternating blocks (which goes first
    flips every round): both see the same minutes of a machine whose load drifts, so the
    difference of their percentiles is the gateway's and not the drift's."""
    straight: list[float] = []
    through: list[float] = []
    per_block = count // blocks
    for block in range(blocks):
        order = [(direct, "direct", straight), (via, "gateway", through)]
        for base, kind, into in order if block % 2 == 0 else order[::-1]:
            into.extend(asyncio.run(open_loop(base, kind, rate, per_block)))
    return straight, through


def closed_loop(
    base: str, kind: str, count: int, pid: int | None = None
) -> tuple[float, float | None]:
    """``count`` requests, CONCURRENCY in flight, from ``http_load``'s process: requests per
    second, and the CPU ms per request of ``pid`` (with its children) while they ran."""
    url, body = base + "/v1/chat/completions", json.dumps(CHAT).encode()
    cpu = (lambda: cpu_s(pid)) if pid is not None else (lambda: 0.0)
    rps, used = http_load.load(url, body, _headers(kind), count, CONCURRENCY, WARMUP, cpu)
    return rps, (used * 1000 / count if pid is not None else None)


async def held_streams(base: str, kind: str, count: int, pid: int) -> tuple[float, int]:
    """RSS (MB) of ``pid`` with ``count`` streams open at once, each past its first bytes,
    and how many were open (fewer when LOAD_TIMEOUT_S passed first)."""
    url, headers = base + "/v1/chat/completions", _headers(kind)
    body = json.dumps(STREAM_CHAT).encode()
    opened = 0
    all_open = asyncio.Event()
    release = asyncio.Event()

    async def one(session: ClientSession) -> None:
        nonlocal opened
        async with session.post(url, data=body, headers=headers) as answer:
            await answer.content.readany()
            opened += 1
            if opened == count:
                all_open.set()
            await release.wait()

    timeout = ClientTimeout(total=LOAD_TIMEOUT_S)
    async with ClientSession(connector=TCPConnector(limit=0), timeout=timeout) as session:
        tasks = [asyncio.create_task(one(session)) for _ in range(count)]
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(all_open.wait(), LOAD_TIMEOUT_S)
                await asyncio.sleep(0.5)
            return rss_mb(pid), opened
        finally:
            release.set()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


# ---- sections ----------------------------------------------------------------------------


def _percentiles(latencies: list[float]) -> tuple[float, float]:
    cuts = statistics.quantiles(latencies, n=100, method="inclusive")
    return cuts[49] * 1000, cuts[98] * 1000


def _latency_and_throughput(binary: str | None) -> None:
    print(
        f"\n  Added latency at {LATENCY_RATE:.0f} requests/s (open loop, {LATENCY_REQUESTS:,} "
        "non-streaming Chat Completions), and requests/s with "
        f"{CONCURRENCY} in flight ({THROUGHPUT_REQUESTS:,}; litellm "
        f"{LITELLM_THROUGHPUT_REQUESTS:,}) from a load generator of its own"
    )
    print(
        f"  {'path':<22} {'p50 ms':>8} {'p99 ms':>8} {'+p50 ms':>8} {'+p99 ms':>8} "
        f"{'req/s':>8} {'CPU ms':>7} {'RSS MB':>7}"
    )
    with provider_process.serve() as fake:
        direct_rps, _ = closed_loop(fake, "direct", THROUGHPUT_REQUESTS)
        peers: list[tuple[str, Any]] = [("backstay gateway", lambda: gateway(fake))]
        if binary is not None:
            peers.append(("litellm proxy", lambda: litellm(binary, fake)))
        base_p50 = base_p99 = 0.0
        for name, start in peers:
            kind = "litellm" if name.startswith("litellm") else "gateway"
            with start() as (url, pid):
                if kind == "gateway":  # alternating blocks, the direct row measured with it
                    base, lat = paired_open_loop(
                        fake, url, LATENCY_RATE, LATENCY_REQUESTS, LATENCY_BLOCKS
                    )
                    base_p50, base_p99 = _percentiles(base)
                    print(f"  {'direct (fake provider)':<22} {base_p50:8.2f} {base_p99:8.2f} "
                          f"{'':>8} {'':>8} {direct_rps:8.0f}")  # fmt: skip
                else:  # its queue grows for the whole run: one run, as the gateway's was
                    lat = asyncio.run(open_loop(url, kind, LATENCY_RATE, LATENCY_REQUESTS))
                p50, p99 = _percentiles(lat)
                count = LITELLM_THROUGHPUT_REQUESTS if kind == "litellm" else THROUGHPUT_REQUESTS
                rps, cpu_ms = closed_loop(url, kind, count, pid)
                assert cpu_ms is not None
                rss = rss_mb(pid)
            print(f"  {name:<22} {p50:8.2f} {p99:8.2f} {p50 - base_p50:8.2f} "
                  f"{p99 - base_p99:8.2f} {rps:8.0f} {cpu_ms:7.3f} {rss:7.0f}")  # fmt: skip
            if name == "backstay gateway":
                met = (
                    p50 - base_p50 <= TARGET_P50_MS
                    and p99 - base_p99 <= TARGET_P99_MS
                    and max(rps, 1000 / cpu_ms) >= TARGET_RPS
                )
                print(
                    f"  target for the gateway: +p50 <= {TARGET_P50_MS} ms, +p99 <= "
                    f"{TARGET_P99_MS} ms, >= {TARGET_RPS:,.0f}/s (measured, or on one free core "
                    f"at its CPU per request: {1000 / cpu_ms:,.0f}/s; the fake provider's own "
                    f"{direct_rps:,.0f}/s is the ceiling): {'met' if met else 'MISSED'}"
                )


def _in_process() -> None:
    """The added latency without a scheduler between the processes: the fake provider and
    a gateway on threads of this process, one request at a time."""
    from backstay.fakeprovider import FakeProvider, Scenario  # noqa: PLC0415 - this row only
    from backstay.gateway import Gateway, GatewaySettings, Upstreams  # noqa: PLC0415

    direct: list[float] = []
    via: list[float] = []
    headers = _headers("gateway")
    with FakeProvider(Scenario()) as fake:
        settings = GatewaySettings(port=0, upstreams=Upstreams.all(fake.url))
        with Gateway(settings) as served, httpx.Client() as client:
            for i in range(SEQUENTIAL + SEQUENTIAL_WARMUP):
                for url, into in ((fake.url, direct), (served.url, via)):
                    started = time.perf_counter()
                    client.post(url + "/v1/chat/completions", json=CHAT, headers=headers)
                    if i >= SEQUENTIAL_WARMUP:
                        into.append(time.perf_counter() - started)
    d50, d99 = _percentiles(direct)
    v50, v99 = _percentiles(via)
    print(
        f"  in one process, one at a time ({SEQUENTIAL} requests): direct p50 {d50:.2f} ms, "
        f"through the gateway {v50:.2f} ms: +p50 {v50 - d50:.2f} ms, +p99 {v99 - d99:.2f} ms"
    )


def _streams(binary: str | None) -> None:
    print(f"\n  Memory with {STREAMS:,} concurrent streams (each past its first event, held)")
    print(f"  {'proxy':<22} {'idle MB':>8} {'streams MB':>11}")
    with provider_process.serve("--fault", "stall:after_events=2") as fake:
        peers: list[tuple[str, Any]] = [("backstay gateway", lambda: gateway(fake))]
        if binary is not None:
            peers.append(("litellm proxy", lambda: litellm(binary, fake)))
        for name, start in peers:
            kind = "litellm" if name.startswith("litellm") else "gateway"
            with start() as (url, pid):
                idle = rss_mb(pid)
                held, opened = asyncio.run(held_streams(url, kind, STREAMS, pid))
            note = (
                "" if opened == STREAMS else f"  (only {opened} open after {LOAD_TIMEOUT_S:.0f} s)"
            )
            print(f"  {name:<22} {idle:8.0f} {held:11.0f}{note}")
            if name == "backstay gateway":
                verdict = "met" if held <= TARGET_RSS_MB and opened == STREAMS else "MISSED"
                print(f"  target for the gateway: <= {TARGET_RSS_MB:.0f} MB: {verdict}")


def _fleet() -> None:
    ideal = FLEET_REQUESTS / (FLEET_RPM / 60.0)
    print(
        f"\n  A fleet: two gateways on one redis-server, provider limit R = {FLEET_RPM:,}/min "
        f"(bucket used up first), M = {FLEET_REQUESTS} requests from {FLEET_THREADS} threads "
        f"split across both; ideal M / R = {ideal:.1f} s"
    )
    if shutil.which("redis-server") is None:
        print("  redis-server is not installed (scripts/install-test-deps): left out")
        return
    with shared_state.redis_server() as url, provider_process.serve() as fake:
        store = f"{url}?namespace=bench-capacity"
        with (
            gateway(fake, "--store", store) as (a, _),
            gateway(fake, "--store", store) as (
                b,
                _,
            ),
        ):
            _send([a], 1, 1)
            started = time.perf_counter()
            _send([a, b], FLEET_REQUESTS, FLEET_THREADS)
            capacity = FLEET_REQUESTS / (time.perf_counter() - started)
    print(
        f"  the same setup against an unlimited provider: {capacity:.1f} requests/s "
        f"(R = {FLEET_RPM / 60:.0f}/s; below it, the machine is the limit, not the provider)"
    )
    with tempfile.TemporaryDirectory(prefix="backstay-bench-fleet-") as directory:
        log = Path(directory) / "requests.jsonl"
        flags = ("--rpm", str(FLEET_RPM), "--log", str(log))
        with shared_state.redis_server() as url, provider_process.serve(*flags) as fake:
            store = f"{url}?namespace=bench-fleet"
            with (
                gateway(fake, "--store", store) as (a, _),
                gateway(fake, "--store", store) as (
                    b,
                    _,
                ),
            ):
                _drain(fake)
                _send([a], 1, 1)  # the fleet learns the limit, and that nothing is left
                mark = _count(fake)
                _send([a, b], FLEET_REQUESTS, FLEET_THREADS)
        entries = [json.loads(line) for line in log.read_text().splitlines()][mark:]
    times = [float(e["time"]) for e in entries]
    refused = sum(1 for e in entries if e["status"] == 429)
    wall = max(times) - min(times)
    ratio = wall / ideal
    print(f"  wall {wall:.2f} s = {ratio:.2f} x M / R; {len(entries)} requests, {refused} 429s "
          f"({refused / len(entries):.1%})")  # fmt: skip
    met = ratio <= TARGET_FLEET_RATIO and refused <= 0.05 * len(entries)
    print(f"  target: <= {TARGET_FLEET_RATIO} x M / R, <= 5 % 429s: {'met' if met else 'MISSED'}")


def _redis_store() -> None:
    """The gateway's Redis calls, made on its event loop: one gateway with its limiters and
    breakers in this process beside one with them on a ``redis-server`` (``--store
    redis://``), against one unlimited fake provider. The Redis commands a request costs
    (the server's own count), the added latency at 200/s (the two gateways' requests in
    alternating blocks, the in-process one in the place of the direct row), and requests/s
    and CPU per request with 64 in flight."""
    print(
        "\n  The gateway with its limiters and breakers on redis-server (--store redis://) "
        "beside the same in this process"
    )
    if shutil.which("redis-server") is None:
        print("  redis-server is not installed (scripts/install-test-deps): left out")
        return
    import redis  # noqa: PLC0415 - this section only

    with (
        shared_state.redis_server() as url,
        provider_process.serve() as fake,
        gateway(fake) as (memory, memory_pid),
        gateway(fake, "--store", f"{url}?namespace=bench-store") as (shared, shared_pid),
    ):
        client = redis.Redis.from_url(url)
        try:
            before = int(client.info("stats")["total_commands_processed"])
            _send([shared], STORE_COUNTED, 1)
            after = int(client.info("stats")["total_commands_processed"])
        finally:
            client.close()
        per_request = (after - before - 1) / STORE_COUNTED  # less the INFO itself
        inner, outer = paired_open_loop(
            memory, shared, LATENCY_RATE, LATENCY_REQUESTS, LATENCY_BLOCKS
        )
        rows = [
            ("in this process", memory, memory_pid, _percentiles(inner)),
            ("on redis-server", shared, shared_pid, _percentiles(outer)),
        ]
        print(f"  Redis commands a request: {per_request:.1f} (over {STORE_COUNTED} requests)")
        print(f"  {'limiters, breakers':<22} {'p50 ms':>8} {'p99 ms':>8} "
              f"{'req/s':>8} {'CPU ms':>7}")  # fmt: skip
        for name, base, pid, (p50, p99) in rows:
            rps, cpu_ms = closed_loop(base, "gateway", THROUGHPUT_REQUESTS, pid)
            assert cpu_ms is not None
            print(f"  {name:<22} {p50:8.2f} {p99:8.2f} {rps:8.0f} {cpu_ms:7.3f}")
        p50_in, p50_out = rows[0][3][0], rows[1][3][0]
        print(f"  Redis adds {p50_out - p50_in:+.2f} ms at p50 (same run, alternating blocks)")


def _drain(fake: str) -> None:
    with httpx.Client(base_url=fake, timeout=30.0) as client:
        for _ in range(20_000):
            answer = client.post("/v1/chat/completions", json=CHAT, headers=_headers("direct"))
            if answer.status_code == 429:
                return
    raise RuntimeError("the provider's bucket did not empty")


def _count(fake: str) -> int:
    return int(httpx.get(fake + "/_backstay/stats", timeout=10.0).json()["requests"])


def _send(urls: list[str], count: int, threads: int) -> None:
    from concurrent.futures import ThreadPoolExecutor  # noqa: PLC0415 - this section only

    def one(i: int) -> None:
        answer = httpx.post(
            urls[i % len(urls)] + "/v1/chat/completions",
            json=CHAT,
            headers=_headers("gateway"),
            timeout=LOAD_TIMEOUT_S,
        )
        if answer.status_code != 200:
            raise RuntimeError(f"a fleet request got {answer.status_code}")

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(one, range(count)))


def report() -> None:
    """Print the gateway section."""
    binary = litellm_bin()
    print(
        "\n== The gateway beside litellm's proxy: one fake provider process, one proxy process =="
    )
    if binary is None:
        print("  litellm's proxy is not installed (pip install 'litellm[proxy]'): backstay alone")
    _latency_and_throughput(binary)
    _in_process()
    _streams(binary)
    _redis_store()
    _fleet()


if __name__ == "__main__":
    report()
