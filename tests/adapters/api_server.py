"""A tiny real HTTP/1.1 server on 127.0.0.1 for the API adapter and transport tests.

Each request is answered by ``respond(request)``, which returns a ``Canned`` reply: a
status, headers and a body, or a stream of chunks written one by one (chunked encoding),
optionally cut without the final chunk (a broken stream), a dropped connection, or a
hang until the client gives up. Every request is recorded (method, path, headers, body).
The server runs its own event loop in a thread and stops, with every connection, on exit.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
from collections.abc import Callable
from typing import Any, Final

# No test waits longer than this on anything the server does.
MAX_HANG_S: Final = 30.0
_REASONS: Final = {200: "OK", 400: "Bad Request", 429: "Too Many Requests", 500: "Error"}


@dataclasses.dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body or b"null")


@dataclasses.dataclass(frozen=True)
class Canned:
    """One reply. ``chunks`` streams (``text/event-stream``); ``cut`` ends a stream
    without its last chunk; ``drop`` closes the connection with no reply; ``hang`` waits
    for the client to go away; ``pause_s`` sleeps before each chunk; ``stall_after``
    stops sending after that many chunks and waits for the client to go away."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = dataclasses.field(default_factory=dict)
    chunks: tuple[str, ...] | None = None
    cut: bool = False
    drop: bool = False
    hang: bool = False
    pause_s: float = 0.0
    stall_after: int | None = None


def sse(*events: tuple[str | None, Any]) -> tuple[str, ...]:
    """Server-sent events: (event name or None, data as JSON or a raw string)."""
    out = []
    for name, data in events:
        text = data if isinstance(data, str) else json.dumps(data)
        head = f"event: {name}\n" if name else ""
        out.append(f"{head}data: {text}\n\n")
    return tuple(out)


class ApiServer:
    """``with ApiServer(respond) as server:`` serves on ``server.url`` until the end."""

    def __init__(self, respond: Callable[[Recorded], Canned]) -> None:
        self.respond = respond
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ApiServer:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the test API server did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        future = asyncio.run_coroutine_threadsafe(self._stop(), self._loop)
        future.result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def seen(self) -> list[Recorded]:
        with self._lock:
            return list(self.requests)

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._handle, "127.0.0.1", 0)
        )
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    async def _stop(self) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            async with asyncio.timeout(MAX_HANG_S):
                await self._exchange(reader, writer)
        except (ConnectionError, TimeoutError, asyncio.IncompleteReadError):
            pass
        finally:
            self._tasks.discard(task)
            writer.close()

    async def _exchange(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        line, *lines = head.split("\r\n")
        method, path, _ = line.split(" ", 2)
        headers = {}
        for item in filter(None, lines):
            name, _, value = item.partition(":")
            headers[name.strip().lower()] = value.strip()
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        recorded = Recorded(method=method, path=path, headers=headers, body=body)
        with self._lock:
            self.requests.append(recorded)
        canned = self.respond(recorded)
        if canned.drop:
            writer.transport.abort()
            return
        if canned.hang:
            await reader.read()  # until the client closes the connection
            return
        reason = _REASONS.get(canned.status, "Status")
        out = [f"HTTP/1.1 {canned.status} {reason}", "connection: close"]
        if canned.chunks is None:
            payload = (
                canned.body if isinstance(canned.body, bytes | str) else json.dumps(canned.body)
            )
            data = payload.encode() if isinstance(payload, str) else payload
            kind = "application/json"
            out += [f"content-type: {kind}", f"content-length: {len(data)}"]
            out += [f"{k}: {v}" for k, v in canned.headers.items()]
            writer.write(("\r\n".join(out) + "\r\n\r\n").encode() + data)
            await writer.drain()
            return
        out += ["content-type: text/event-stream", "transfer-encoding: chunked"]
        out += [f"{k}: {v}" for k, v in canned.headers.items()]
        writer.write(("\r\n".join(out) + "\r\n\r\n").encode())
        for i, chunk in enumerate(canned.chunks):
            if i == canned.stall_after:
                await reader.read()
                return
            if canned.pause_s:
                await asyncio.sleep(canned.pause_s)
            data = chunk.encode()
            writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            await writer.drain()
        if canned.cut:
            writer.transport.abort()
            return
        writer.write(b"0\r\n\r\n")
        await writer.drain()
