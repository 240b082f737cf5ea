"""A lean HTTP/1.1 load generator, run as a process of its own, so that a throughput
measurement is the server's and not the client's: raw keep-alive connections (asyncio
protocols, no HTTP library), each sending one prepared request again as soon as the
previous answer has ended. It spends about a tenth of the CPU per request an aiohttp
client does, which matters on a machine whose cores the client shares with the servers.

Answers must carry ``Content-Length`` (the gateway's and the fake provider's non-streaming
answers do); an answer that is not 200, or that cannot be read, ends the run with an error.

As a process: ``python http_load.py URL COUNT CONCURRENCY WARMUP`` with the request's JSON
body on standard input's first line and its headers as JSON on the second; it sends
WARMUP requests, prints ``ready`` and waits for a line on standard input (the caller reads
the servers' CPU time then), sends COUNT requests and prints the requests per second.
``load(...)`` does the same from a parent: the rate, and the server's CPU time around it.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Final
from urllib.parse import urlsplit

TIMEOUT_S: Final = 300.0
_END: Final = b"\r\n\r\n"
_LENGTH: Final = b"\r\ncontent-length:"


class _Run:
    """The requests still to send and the connections' end."""

    def __init__(self, count: int, done: asyncio.Future[None]) -> None:
        self.left = count
        self.done = done
        self.open = 0

    def finished(self, error: str | None = None) -> None:
        if self.done.done():
            return
        if error is not None:
            self.done.set_exception(RuntimeError(error))
        elif self.open == 0:
            self.done.set_result(None)


class _Connection(asyncio.Protocol):
    """One keep-alive connection sending ``request`` while its run has requests left."""

    def __init__(self, request: bytes) -> None:
        self.request = request
        self.buffer = b""
        self.transport: asyncio.Transport | None = None
        self.run: _Run | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def start(self, run: _Run) -> None:
        self.run = run
        run.open += 1
        self._next()

    def _next(self) -> None:
        run, transport = self.run, self.transport
        assert run is not None
        assert transport is not None
        if run.left <= 0:
            run.open -= 1
            self.run = None
            run.finished()
            return
        run.left -= 1
        transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            head_end = self.buffer.find(_END)
            if head_end < 0:
                return
            head = self.buffer[:head_end]
            length = _content_length(head)
            if length is None:
                self._fail("an answer without Content-Length")
                return
            end = head_end + len(_END) + length
            if len(self.buffer) < end:
                return
            status = head[9:12]
            self.buffer = self.buffer[end:]
            if status != b"200":
                self._fail(f"an answer with status {status.decode(errors='replace')}")
                return
            self._next()

    def _fail(self, error: str) -> None:
        if self.run is not None:
            self.run.finished(error)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.run is not None:
            self.run.finished(f"the connection was lost: {exc}")


def _content_length(head: bytes) -> int | None:
    at = head.lower().find(_LENGTH)
    if at < 0:
        return None
    start = at + len(_LENGTH)
    end = head.find(b"\r\n", start)
    return int(head[start : end if end >= 0 else len(head)])


def _request(url: str, body: bytes, headers: dict[str, str]) -> tuple[str, int, bytes]:
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    lines = [f"POST {parts.path or '/'} HTTP/1.1", f"Host: {host}:{port}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    lines += [f"Content-Length: {len(body)}", "", ""]
    return host, port, "\r\n".join(lines).encode() + body


async def _send(connections: list[_Connection], count: int) -> float:
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    run = _Run(count, done)
    started = time.perf_counter()
    for connection in connections:
        connection.start(run)
    await asyncio.wait_for(done, TIMEOUT_S)
    return count / (time.perf_counter() - started)


async def _main(url: str, count: int, concurrency: int, warmup: int) -> None:
    body = sys.stdin.readline().strip().encode()
    headers = json.loads(sys.stdin.readline())
    host, port, request = _request(url, body, headers)
    loop = asyncio.get_running_loop()
    connections = []
    for _ in range(concurrency):
        _, protocol = await loop.create_connection(lambda: _Connection(request), host, port)
        connections.append(protocol)
    await _send(connections, warmup)
    print("ready", flush=True)
    await loop.run_in_executor(None, sys.stdin.readline)
    print(f"{await _send(connections, count):.1f}", flush=True)
    for connection in connections:
        if connection.transport is not None:
            connection.transport.close()


def load(  # noqa: PLR0917 - one measurement's parts
    url: str,
    body: bytes,
    headers: dict[str, str],
    count: int,
    concurrency: int,
    warmup: int,
    cpu: Callable[[], float],
) -> tuple[float, float]:
    """``count`` requests with ``concurrency`` in flight from a process of their own (after
    ``warmup`` more): requests per second, and what ``cpu()`` (a server's CPU seconds)
    grew by while they ran."""
    process = subprocess.Popen(  # noqa: S603 - this file, our arguments
        [sys.executable, __file__, url, str(count), str(concurrency), str(warmup)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdin is not None
        assert process.stdout is not None
        process.stdin.write(body.decode() + "\n" + json.dumps(headers) + "\n")
        process.stdin.flush()
        if process.stdout.readline().strip() != "ready":
            raise RuntimeError("the load generator failed while warming up")
        before = cpu()
        process.stdin.write("\n")
        process.stdin.flush()
        line = process.stdout.readline()
        used = cpu() - before
        if not line.strip():
            raise RuntimeError("the load generator failed")
        return float(line), used
    finally:
        if process.poll() is None:
            process.terminate()
        process.wait(TIMEOUT_S)


if __name__ == "__main__":
    asyncio.run(_main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])))
