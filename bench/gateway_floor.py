"""Where the gateway's added latency comes from: ``backstay gateway`` beside three floors, each
one process in front of the same fake provider (its own process), measured in the same run
as ``gateway.py`` measures its latency rows (200 requests/s open loop, 2,000 non-streaming
Chat Completions, the direct and the proxied requests in ten alternating blocks):

* a byte pipe: each client connection copied to an upstream connection of its own, no
  HTTP read at all: what two more hops between processes cost on this machine;
* a bare aiohttp proxy: aiohttp's server reads the request, one ``ClientSession`` sends it
  on and the answer is sent back whole, nothing else (no classification, limits, breaker,
  events): what the HTTP library the gateway is built on costs;
* a bare protocol proxy: a request read off an asyncio protocol (``Content-Length``
  bodies only), sent on a kept-alive upstream connection of a pool of its own and the
  answer (``Content-Length`` only) sent back whole, nothing else: what an HTTP server and
  client on asyncio's protocols cost — the gateway's own server (``gateway/http1.py``) is
  one, and so is its upstream client for the requests it forwards (``gateway/upstream_h1.py``);
* ``backstay gateway``.

Each row is the proxy's p50 / p99 less the direct ones of its own blocks, ``ROUNDS`` times.
The gateway's target is +p50 <= 1 ms and +p99 <= 5 ms (docs/benchmarks.md, "Gateway").

Run with ``.venv/bin/python bench/gateway_floor.py``; ``make bench`` runs it after
``gateway.py``. ``gateway_floor.py serve pipe|aiohttp|protocol UPSTREAM`` is one floor's process.

``gateway_floor.py ab SRC_A SRC_B`` sets two source trees' gateways side by side (e.g. a
``git worktree`` of the commit before a change and the tree after it), both running at once
in front of one fake provider: each round, for each in turn (the order flips every round),
the latency rows as above and then ``gateway.py``'s closed loop, with the gateway's CPU per
request: a before/after that sees the same minutes of a shared machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import urllib.parse
from collections.abc import Callable, Iterator
from typing import Any, Final

from aiohttp import ClientSession, TCPConnector, web

import gateway
import provider_process

ROUNDS: Final = 2


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
    finally:
        writer.close()


async def _serve_pipe(upstream: str) -> None:
    parts = urllib.parse.urlsplit(upstream)

    async def one(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(parts.hostname, parts.port)
        await asyncio.gather(
            _pipe(reader, up_writer), _pipe(up_reader, writer), return_exceptions=True
        )

    server = await asyncio.start_server(one, "127.0.0.1", 0)
    print(f"listening on http://127.0.0.1:{server.sockets[0].getsockname()[1]}", flush=True)
    await server.serve_forever()


async def _serve_aiohttp(upstream: str) -> None:
    session = ClientSession(connector=TCPConnector(limit=0))

    async def one(request: web.Request) -> web.Response:
        body = await request.read()
        headers = {
            "content-type": "application/json",
            "authorization": request.headers.get("authorization", ""),
        }
        async with session.post(upstream + request.path, data=body, headers=headers) as answer:
            data = await answer.read()
            return web.Response(body=data, status=answer.status, content_type="application/json")

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", one)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    print(f"listening on http://127.0.0.1:{port}", flush=True)
    await asyncio.Event().wait()


class _Reads(asyncio.Protocol):
    """One side of the bare protocol proxy: whole messages (head and ``Content-Length``
    body) read off a connection, each handed to ``on_message``."""

    def __init__(self, on_message: Callable[[_Reads, bytes, bytes], None]) -> None:
        self.buffer = b""
        self.on_message = on_message
        self.transport: Any = None

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while (end := self.buffer.find(b"\r\n\r\n")) >= 0:
            head = self.buffer[:end]
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            if len(self.buffer) < end + 4 + length:
                return
            body = self.buffer[end + 4 : end + 4 + length]
            self.buffer = self.buffer[end + 4 + length :]
            self.on_message(self, head, body)


async def _serve_protocol(upstream: str) -> None:
    parts = urllib.parse.urlsplit(upstream)
    loop = asyncio.get_running_loop()
    idle: list[_Reads] = []
    waiting: dict[_Reads, asyncio.Future[tuple[bytes, bytes]]] = {}

    def answered(connection: _Reads, head: bytes, body: bytes) -> None:
        waiting.pop(connection).set_result((head, body))

    async def forward(client: _Reads, head: bytes, body: bytes) -> None:
        lines = head.split(b"\r\n")
        kept = [line for line in lines[1:] if line.split(b":")[0].lower() in _FORWARDED]
        if idle:
            connection = idle.pop()
        else:
            _, connection = await loop.create_connection(
                lambda: _Reads(answered), parts.hostname or "127.0.0.1", parts.port or 80
            )
        waiting[connection] = answer = loop.create_future()
        request_line = lines[0].split(b" ")
        connection.transport.write(
            b"\r\n".join(
                [
                    request_line[0] + b" " + request_line[1] + b" HTTP/1.1",
                    b"host: upstream",
                    *kept,
                    b"content-length: %d" % len(body),
                    b"",
                    body,
                ]
            )
        )
        answer_head, answer_body = await answer
        idle.append(connection)
        status = answer_head.split(b"\r\n", 1)[0].split(b" ")[1]
        client.transport.write(
            b"HTTP/1.1 %b OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%b"
            % (status, len(answer_body), answer_body)
        )

    tasks: set[asyncio.Task[None]] = set()

    def received(client: _Reads, head: bytes, body: bytes) -> None:
        task = loop.create_task(forward(client, head, body))
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    server = await loop.create_server(lambda: _Reads(received), "127.0.0.1", 0)
    print(f"listening on http://127.0.0.1:{server.sockets[0].getsockname()[1]}", flush=True)
    await server.serve_forever()


_FORWARDED: Final = frozenset({b"authorization", b"content-type", b"x-api-key"})


def _loop_runner() -> Callable[[Any], None]:
    """uvloop's runner where installed (as ``backstay gateway`` serves), else asyncio's."""
    try:
        import uvloop  # noqa: PLC0415 - optional
    except ImportError:
        return asyncio.run
    return uvloop.run


@contextlib.contextmanager
def floor(kind: str, upstream: str) -> Iterator[tuple[str, int]]:
    """One floor proxy (``pipe``, ``aiohttp`` or ``protocol``) in a child process: its URL
    and PID."""
    argv = [sys.executable, __file__, "serve", kind, upstream]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)  # noqa: S603
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if "listening on" not in line:
            raise RuntimeError(f"the {kind} floor did not start: {line!r}")
        yield line.rsplit(" ", 1)[-1].strip(), process.pid
    finally:
        gateway._stop(process)


def report() -> None:
    print(
        f"\n  The gateway's added latency beside its floors ({gateway.LATENCY_RATE:.0f} "
        f"requests/s open loop, {gateway.LATENCY_REQUESTS:,} requests a row, {ROUNDS} rounds)"
    )
    print(f"  {'proxy':<24} {'+p50 ms':>8} {'+p99 ms':>8}")
    with provider_process.serve() as fake:
        proxies: list[tuple[str, Callable[[], Any]]] = [
            ("byte pipe", lambda: floor("pipe", fake)),
            ("bare aiohttp proxy", lambda: floor("aiohttp", fake)),
            ("bare protocol proxy", lambda: floor("protocol", fake)),
            ("backstay gateway", lambda: gateway.gateway(fake)),
        ]
        for _ in range(ROUNDS):
            for name, start in proxies:
                with start() as (url, _pid):
                    base, through = gateway.paired_open_loop(
                        fake,
                        url,
                        gateway.LATENCY_RATE,
                        gateway.LATENCY_REQUESTS,
                        gateway.LATENCY_BLOCKS,
                    )
                b50, b99 = gateway._percentiles(base)
                p50, p99 = gateway._percentiles(through)
                print(f"  {name:<24} {p50 - b50:8.2f} {p99 - b99:8.2f}")


@contextlib.contextmanager
def tree_gateway(src: str, upstream: str) -> Iterator[tuple[str, int]]:
    """``backstay gateway`` of the source tree at ``src`` in a child process: its URL, PID."""
    argv = [sys.executable, "-c", gateway.MAIN, "gateway", "--port", "0", "--upstream", upstream]
    env = {**os.environ, "PYTHONPATH": src}
    process = subprocess.Popen(  # noqa: S603 - our own CLI, our own arguments
        argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if "listening on" not in line:
            raise RuntimeError(f"the gateway of {src} did not start: {line!r}")
        yield line.rsplit(" ", 1)[-1].strip(), process.pid
    finally:
        gateway._stop(process)


def ab(src_a: str, src_b: str, rounds: int = 3) -> None:
    """Two trees' gateways side by side (the module docstring)."""
    print(f"\n  A: {src_a}\n  B: {src_b}")
    print(f"  {'round':<6} {'tree':<5} {'+p50 ms':>8} {'+p99 ms':>8} {'req/s':>8} {'CPU ms':>7}")
    with (
        provider_process.serve() as fake,
        tree_gateway(src_a, fake) as (url_a, pid_a),
        tree_gateway(src_b, fake) as (url_b, pid_b),
    ):
        trees = [("A", url_a, pid_a), ("B", url_b, pid_b)]
        for round_ in range(1, rounds + 1):
            for name, url, pid in trees if round_ % 2 else trees[::-1]:
                base, through = gateway.paired_open_loop(
                    fake,
                    url,
                    gateway.LATENCY_RATE,
                    gateway.LATENCY_REQUESTS,
                    gateway.LATENCY_BLOCKS,
                )
                b50, b99 = gateway._percentiles(base)
                p50, p99 = gateway._percentiles(through)
                rps, cpu_ms = gateway.closed_loop(url, "gateway", gateway.THROUGHPUT_REQUESTS, pid)
                print(f"  {round_:<6} {name:<5} {p50 - b50:8.2f} {p99 - b99:8.2f} {rps:8.0f} "
                      f"{cpu_ms or 0.0:7.3f}", flush=True)  # fmt: skip


if __name__ == "__main__":
    if sys.argv[1:2] == ["ab"]:
        ab(sys.argv[2], sys.argv[3])
    elif sys.argv[1:2] == ["serve"]:
        serve = {"pipe": _serve_pipe, "aiohttp": _serve_aiohttp, "protocol": _serve_protocol}[
            sys.argv[2]
        ]
        _loop_runner()(serve(sys.argv[3]))
    else:
        report()
