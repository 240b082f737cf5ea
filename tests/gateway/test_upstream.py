"""``Upstream`` beside aiohttp's ``ClientSession.request``, against a real socket server on
127.0.0.1: the same bytes on the wire, the same answers read (chunked, gzip), kept-alive
connections reused, and the same exceptions for a refused connection, a connection closed
without an answer and a read that times out."""

from __future__ import annotations

import asyncio
import gzip
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Final

import aiohttp
import pytest

from backstay.gateway.upstream import Upstream

WAIT_S: Final = 10.0
OK: Final = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"

Reply = Callable[[bytes], bytes | None]


class _Server:
    """A raw HTTP/1.1 server: records each request's bytes and the connections made; each
    request is answered with ``reply(request)`` (``None``: the connection is closed)."""

    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self.requests: list[bytes] = []
        self.connections = 0

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            for _ in range(100):
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                data = head + await reader.readexactly(length)
                self.requests.append(data)
                answer = self.reply(data)
                if answer is None:
                    break
                writer.write(answer)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


@asynccontextmanager
async def _served(reply: Reply = lambda _: OK) -> AsyncIterator[tuple[_Server, str]]:
    server = _Server(reply)
    listening = await asyncio.start_server(server.serve, "127.0.0.1", 0)
    port = listening.sockets[0].getsockname()[1]
    try:
        yield server, f"http://127.0.0.1:{port}"
    finally:
        listening.close()
        await listening.wait_closed()


@asynccontextmanager
async def _session(read_timeout_s: float = WAIT_S) -> AsyncIterator[aiohttp.ClientSession]:
    """A session as the gateway makes it (``backstay.gateway.server``)."""
    timeout = aiohttp.ClientTimeout(total=None, connect=WAIT_S, sock_read=read_timeout_s)
    async with aiohttp.ClientSession(
        timeout=timeout,
        connector=aiohttp.TCPConnector(limit=0),
        auto_decompress=True,
        cookie_jar=aiohttp.DummyCookieJar(),
    ) as session:
        yield session


def _run(test: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(test(), 60.0))


HEADER_CASES: Final = [
    ((("authorization", "Bearer k"), ("content-type", "application/json")), b'{"a": 1}'),
    ((("x-api-key", "k"), ("Idempotency-Key", "backstay-gw-1"), ("anthropic-version", "1")), b"{}"),
    ((("User-Agent", "mine/1"), ("Accept", "text/plain"), ("Accept-Encoding", "br")), b"zz"),
    ((("x-goog-api-key", "k"), ("x-note", "caf\u00e9")), b""),
    ((("Host", "elsewhere.example"), ("content-type", "application/json")), b"{}"),
    ((), b"x" * 70_000),
]


@pytest.mark.parametrize(("headers", "body"), HEADER_CASES)
def test_a_post_goes_out_as_the_sessions_request_would_send_it(
    headers: tuple[tuple[str, str], ...], body: bytes
) -> None:
    async def test() -> None:
        async with _served() as (server, url), _session() as session:
            target = url + "/v1/chat/completions?alt=sse&q=a%20b"
            answer = await session.request(
                "POST", target, headers=list(headers), data=body or None, allow_redirects=False
            )
            assert await answer.read() == b"{}"
            answer.release()
            lean = await Upstream(session).send("POST", target, headers, body)
            assert (lean.status, await lean.read()) == (200, b"{}")
            lean.release()
            assert len(server.requests) == 2
            assert server.requests[1] == server.requests[0]

    _run(test)


def test_kept_alive_connections_are_reused_and_answers_are_decoded() -> None:
    text = b'{"id": "chatcmpl-1", "choices": []}'
    packed = gzip.compress(text)
    chunked = (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n"
        + f"{len(packed):x}\r\n".encode()
        + packed
        + b"\r\n0\r\n\r\n"
    )

    async def test() -> None:
        async with _served(lambda _: chunked) as (server, url), _session() as session:
            upstream = Upstream(session)
            for _ in range(3):
                answer = await upstream.send("POST", url + "/v1/responses", (), b"{}")
                assert answer.content_type == "application/json"
                assert answer.headers["Content-Encoding"] == "gzip"
                assert await answer.read() == text
                answer.release()
            assert server.connections == 1

    _run(test)


def test_an_answer_released_before_its_end_does_not_go_back_to_the_pool() -> None:
    stream = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n6\r\ndata: \r\n"
    )

    async def test() -> None:
        async with _served(lambda _: stream) as (server, url), _session() as session:
            upstream = Upstream(session)
            answer = await upstream.send("POST", url + "/v1/messages", (), b"{}")
            assert answer.content_type == "text/event-stream"
            assert await answer.content.readany() == b"data: "
            answer.release()  # mid-stream: closed, not kept
            again = await upstream.send("POST", url + "/v1/messages", (), b"{}")
            again.release()
            assert server.connections == 2

    _run(test)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _failure(
    session: aiohttp.ClientSession, send: Callable[[], Awaitable[object]]
) -> BaseException:
    try:
        answer = await send()
        await answer.read()  # type: ignore[attr-defined]
    except Exception as exc:
        return exc
    raise AssertionError("no failure")


@pytest.mark.parametrize("case", ["refused", "closed", "read_timeout"])
def test_failures_are_the_exceptions_the_session_raises(case: str) -> None:
    async def test() -> None:
        reply: Reply = (lambda _: None) if case == "closed" else (lambda _: OK)
        if case == "read_timeout":
            reply = lambda _: b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{"  # noqa: E731
        async with _served(reply) as (_, url), _session(read_timeout_s=0.3) as session:
            target = (f"http://127.0.0.1:{_free_port()}" if case == "refused" else url) + "/v1/x"
            by_session = await _failure(
                session,
                lambda: session.request("POST", target, data=b"{}", allow_redirects=False),
            )
            by_upstream = await _failure(
                session, lambda: Upstream(session).send("POST", target, (), b"{}")
            )
            assert type(by_upstream) is type(by_session)
            assert str(by_upstream) == str(by_session)

    _run(test)


def test_other_methods_and_framing_headers_go_through_the_session() -> None:
    async def test() -> None:
        async with _served() as (server, url), _session() as session:
            upstream = Upstream(session)
            got = await upstream.send("GET", url + "/v1/models", (("x-api-key", "k"),), b"")
            assert isinstance(got, aiohttp.ClientResponse)
            got.release()
            framed = (("content-length", "2"),)
            got = await upstream.send("POST", url + "/v1/messages", framed, b"{}")
            assert isinstance(got, aiohttp.ClientResponse)
            got.release()
            assert server.requests[0].startswith(b"GET /v1/models HTTP/1.1\r\n")

    _run(test)
