"""The gateway's own upstream client (``Upstream(session, lean=True)``, ``upstream_h1``)
against raw socket servers on 127.0.0.1: the bytes it sends, kept-alive connections,
answers framed by length, chunks or the connection's end, a connection the peer closed
while idle, answers cut short, timeouts, a hang-up, and TLS with a certificate made here."""

from __future__ import annotations

import asyncio
import datetime
import gzip
import ipaddress
import socket
import ssl
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Final

import aiohttp
import pytest

from backstay.classify import classify
from backstay.gateway.upstream import Upstream, close_own_connections
from backstay.gateway.upstream_h1 import H1Answer

WAIT_S: Final = 10.0
OK: Final = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
CLOSE: Final = b"<close>"  # close the connection (a FIN)
RESET: Final = b"<reset>"  # reset it (an RST)
HOLD: Final = b"<hold>"  # write nothing more until the test lets go

# What a request is answered with: the pieces written in turn (with the markers above).
Script = Callable[[int, bytes], list[bytes]]


class _Server:
    """A raw HTTP/1.1 server: each request's bytes recorded with the number of its
    connection; answered with ``script(number of the request, its bytes)``."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[tuple[int, bytes]] = []
        self.connections = 0
        self.ended = 0  # connections whose client closed them
        self.changed = asyncio.Event()
        self.let_go = asyncio.Event()

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        number = self.connections
        try:
            for _ in range(100):
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError:
                    self.ended += 1
                    return
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                data = head + await reader.readexactly(length)
                self.requests.append((number, data))
                for piece in self.script(len(self.requests), data):
                    if piece == CLOSE:
                        return
                    if piece == RESET:
                        writer.transport.abort()
                        return
                    if piece == HOLD:
                        await self._held(reader)
                        return
                    writer.write(piece)
                    await writer.drain()
        except ConnectionError:
            self.ended += 1
        finally:
            writer.close()
            self.changed.set()

    async def _held(self, reader: asyncio.StreamReader) -> None:
        """Write nothing more; count the client's hang-up (or stop when let go)."""
        reading = asyncio.ensure_future(reader.read(1))
        letting = asyncio.ensure_future(self.let_go.wait())
        done, pending = await asyncio.wait(
            {reading, letting}, timeout=30.0, return_when=asyncio.FIRST_COMPLETED
        )
        for task in pending:
            task.cancel()
        if reading in done and reading.exception() is None and reading.result() == b"":
            self.ended += 1


@asynccontextmanager
async def _served(
    script: Script = lambda _n, _d: [OK], context: ssl.SSLContext | None = None
) -> AsyncIterator[tuple[_Server, str]]:
    server = _Server(script)
    listening = await asyncio.start_server(server.serve, "127.0.0.1", 0, ssl=context)
    port = listening.sockets[0].getsockname()[1]
    try:
        yield server, f"{'https' if context else 'http'}://127.0.0.1:{port}"
    finally:
        server.let_go.set()
        listening.close()
        await listening.wait_closed()


@asynccontextmanager
async def _session(read_timeout_s: float = WAIT_S) -> AsyncIterator[aiohttp.ClientSession]:
    """A session as the gateway makes it (``backstay.gateway.server``); the connections of
    its lean upstreams closed with it, as the gateway closes them."""
    timeout = aiohttp.ClientTimeout(total=None, connect=WAIT_S, sock_read=read_timeout_s)
    async with aiohttp.ClientSession(
        timeout=timeout,
        connector=aiohttp.TCPConnector(limit=0),
        auto_decompress=True,
        cookie_jar=aiohttp.DummyCookieJar(),
    ) as session:
        try:
            yield session
        finally:
            await close_own_connections(session)


def _run(test: Callable[[], Awaitable[None]], loop: str = "asyncio") -> None:
    """Run ``test`` on asyncio's event loop, or uvloop's (``backstay gateway``'s own)."""
    factory = None
    if loop == "uvloop":
        uvloop = pytest.importorskip("uvloop")
        factory = uvloop.new_event_loop
    with asyncio.Runner(loop_factory=factory) as runner:
        runner.run(asyncio.wait_for(test(), 60.0))


LOOPS: Final = ["asyncio", "uvloop"]


async def _until(check: Callable[[], bool], server: _Server) -> None:
    """Wait (bounded) until ``check()`` holds after a change at the server."""
    for _ in range(200):
        if check():
            return
        server.changed.clear()
        try:
            await asyncio.wait_for(server.changed.wait(), 0.05)
        except TimeoutError:
            continue
    assert check()


async def _failure(send: Callable[[], Awaitable[object]]) -> BaseException:
    try:
        answer = await send()
        await answer.read()  # type: ignore[attr-defined]
    except Exception as exc:
        return exc
    raise AssertionError("no failure")


# ---- what goes out --------------------------------------------------------------------

HEADER_CASES: Final = [
    ((("authorization", "Bearer k"), ("content-type", "application/json")), b'{"a": 1}'),
    ((("x-api-key", "k"), ("Idempotency-Key", "backstay-gw-1"), ("anthropic-version", "1")), b"{}"),
    ((("User-Agent", "mine/1"), ("Accept", "text/plain")), b"zz"),
    ((("x-goog-api-key", "k"), ("x-note", "caf\u00e9")), b""),
    ((("Host", "elsewhere.example"), ("content-type", "application/json")), b"{}"),
    ((), b"x" * 300_000),
]


@pytest.mark.parametrize(("headers", "body"), HEADER_CASES)
def test_a_post_goes_out_as_the_sessions_request_sends_it(
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
            lean = await Upstream(session, lean=True).send("POST", target, headers, body)
            assert isinstance(lean, H1Answer)
            assert (lean.status, await lean.read()) == (200, b"{}")
            assert [data for _, data in server.requests] == [server.requests[0][1]] * 2

    _run(test)


def test_a_get_and_framing_headers_of_the_clients_go_through_the_session() -> None:
    async def test() -> None:
        async with _served() as (_, url), _session() as session:
            upstream = Upstream(session, lean=True)
            got = await upstream.send("GET", url + "/v1/models", (), b"")
            assert isinstance(got, aiohttp.ClientResponse)
            got.release()
            got = await upstream.send("POST", url + "/v1/x", (("Expect", "100-continue"),), b"")
            assert isinstance(got, aiohttp.ClientResponse)
            got.release()

    _run(test)


# ---- answers and connections ----------------------------------------------------------


def _chunked(body: bytes, head: bytes = b"Content-Type: text/event-stream\r\n") -> bytes:
    pieces = [body[i : i + 7] for i in range(0, len(body), 7)]
    chunks = b"".join(b"%x;ext=1\r\n%b\r\n" % (len(p), p) for p in pieces)
    return (
        b"HTTP/1.1 200 OK\r\n"
        + head
        + b"Transfer-Encoding: chunked\r\n\r\n"
        + chunks
        + (b"0\r\nx-trailer: 1\r\n\r\n")
    )


@pytest.mark.parametrize("loop", LOOPS)
def test_kept_alive_connections_are_reused_for_answers_of_every_framing(loop: str) -> None:
    text = b'data: {"a": 1}\n\ndata: [DONE]\n\n'
    packed = gzip.compress(b'{"id": "x"}')
    deflated = zlib.compress(b'{"id": "y"}')
    answers = [
        OK,
        _chunked(text),
        b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n%b"
        % (len(packed), packed),
        b"HTTP/1.1 200 OK\r\nContent-Encoding: deflate\r\nContent-Length: %d\r\n\r\n%b"
        % (len(deflated), deflated),
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
        b"HTTP/1.1 529 Overloaded\r\nContent-Length: 0\r\n\r\n",
    ]
    expected = [b"{}", text, b'{"id": "x"}', b'{"id": "y"}', b"", b""]

    def script(number: int, _data: bytes) -> list[bytes]:
        answer = answers[(number - 1) % len(answers)]
        return [answer[i : i + 5] for i in range(0, len(answer), 5)]  # in small pieces

    async def test() -> None:
        async with _served(script) as (server, url), _session() as session:
            upstream = Upstream(session, lean=True)
            for want in expected * 2:
                answer = await upstream.send("POST", url + "/v1/messages", (), b"{}")
                assert await answer.read() == want
            assert server.connections == 1
            assert len(server.requests) == 12

    _run(test, loop)


def test_a_stream_is_read_piece_by_piece_and_its_connection_kept_at_its_end() -> None:
    events = [b"data: %d\n\n" % i for i in range(3)]

    def script(number: int, _data: bytes) -> list[bytes]:
        if number > 1:
            return [OK]
        head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
        head += b"Transfer-Encoding: chunked\r\n\r\n"
        return [head, *(b"%x\r\n%b\r\n" % (len(e), e) for e in events), b"0\r\n\r\n"]

    async def test() -> None:
        async with _served(script) as (server, url), _session() as session:
            upstream = Upstream(session, lean=True)
            answer = await upstream.send("POST", url + "/v1/messages", (), b"{}")
            assert answer.content_type == "text/event-stream"
            got = [piece async for piece in answer.content.iter_any()]
            assert b"".join(got) == b"".join(events)
            again = await upstream.send("POST", url + "/v1/messages", (), b"{}")
            assert await again.read() == b"{}"
            assert server.connections == 1

    _run(test)


def test_an_answer_to_the_connections_end_is_read_whole_and_the_connection_not_kept() -> None:
    def script(_number: int, _data: bytes) -> list[bytes]:
        return [
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n",
            b'{"a":',
            b"1}",
            CLOSE,
        ]

    async def test() -> None:
        async with _served(script) as (server, url), _session() as session:
            upstream = Upstream(session, lean=True)
            for _ in range(2):
                answer = await upstream.send("POST", url + "/v1/x", (), b"{}")
                assert await answer.read() == b'{"a":1}'
            assert server.connections == 2

    _run(test)


def test_a_connection_the_peer_closed_while_idle_is_not_used() -> None:
    async def test() -> None:
        async with _served(lambda _n, _d: [OK, CLOSE]) as (server, url), _session() as session:
            upstream = Upstream(session, lean=True)
            first = await upstream.send("POST", url + "/v1/x", (), b"{}")
            assert await first.read() == b"{}"
            await _until(server.changed.is_set, server)
            await asyncio.sleep(0.05)  # the close reaches the client
            second = await upstream.send("POST", url + "/v1/x", (), b"{}")
            assert await second.read() == b"{}"
            assert [number for number, _ in server.requests] == [1, 2]

    _run(test)


@pytest.mark.parametrize("loop", LOOPS)
@pytest.mark.parametrize("end", [CLOSE, RESET])
def test_a_kept_alive_connection_ended_before_any_byte_of_the_answer_is_sent_once_more(
    end: bytes, loop: str
) -> None:
    """The peer closed it as the request went out (it never answered): once more, on a new
    connection, and only once."""

    def script(number: int, _data: bytes) -> list[bytes]:
        return [end] if number == 2 else [OK]

    async def test() -> None:
        async with _served(script) as (server, url), _session() as session:
            upstream = Upstream(session, lean=True)
            for _ in range(2):
                answer = await upstream.send("POST", url + "/v1/x", (), b"{}")
                assert await answer.read() == b"{}"
            assert [number for number, _ in server.requests] == [1, 1, 2]

    _run(test, loop)


def test_a_new_connection_ended_without_an_answer_is_a_failure_not_sent_again() -> None:
    async def test() -> None:
        async with _served(lambda _n, _d: [CLOSE]) as (server, url), _session() as session:
            failed = await _failure(
                lambda: Upstream(session, lean=True).send("POST", url + "/v1/x", (), b"{}")
            )
            assert isinstance(failed, aiohttp.ServerDisconnectedError)
            assert len(server.requests) == 1

    _run(test)


@pytest.mark.parametrize(
    "partial",
    [b"HTTP/1.1 2", b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{"],
    ids=["head", "body"],
)
def test_a_kept_alive_connection_ended_after_a_byte_of_the_answer_is_never_sent_again(
    partial: bytes,
) -> None:
    def script(number: int, _data: bytes) -> list[bytes]:
        return [partial, CLOSE] if number == 2 else [OK]

    async def test() -> None:
        async with _served(script) as (server, url), _session() as session:
            upstream = Upstream(session, lean=True)
            first = await upstream.send("POST", url + "/v1/x", (), b"{}")
            assert await first.read() == b"{}"
            failed = await _failure(lambda: upstream.send("POST", url + "/v1/x", (), b"{}"))
            assert isinstance(failed, aiohttp.ClientError)
            assert len(server.requests) == 2

    _run(test)


CUT_CASES: Final = {
    "length": b'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"a":',
    "chunked": b'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{"a":\r\n',
    "no_answer": b"",
    "bad_chunk": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
}


@pytest.mark.parametrize("case", list(CUT_CASES))
def test_an_answer_cut_short_is_classified_as_the_sessions_failure(case: str) -> None:
    async def test() -> None:
        def script(_n: int, _d: bytes) -> list[bytes]:
            return [CUT_CASES[case], CLOSE]

        async with _served(script) as (_, url), _session() as session:
            target = url + "/v1/x"
            by_session = await _failure(
                lambda: session.request("POST", target, data=b"{}", allow_redirects=False)
            )
            by_lean = await _failure(
                lambda: Upstream(session, lean=True).send("POST", target, (), b"{}")
            )
            assert type(by_lean) is type(by_session)
            if case in {"length", "chunked", "no_answer"}:
                assert str(by_lean) == str(by_session)
            lean, session_failure = classify(by_lean), classify(by_session)
            assert (lean.code, lean.kind) == (session_failure.code, session_failure.kind)

    _run(test)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("case", ["refused", "head_timeout", "body_timeout"])
def test_failures_to_connect_and_read_are_the_sessions_own(case: str) -> None:
    async def test() -> None:
        pieces = {
            "refused": [OK],
            "head_timeout": [HOLD],
            "body_timeout": [b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{", HOLD],
        }[case]
        async with _served(lambda _n, _d: pieces) as (_, url), _session(0.3) as session:
            target = (f"http://127.0.0.1:{_free_port()}" if case == "refused" else url) + "/v1/x"
            by_session = await _failure(
                lambda: session.request("POST", target, data=b"{}", allow_redirects=False)
            )
            by_lean = await _failure(
                lambda: Upstream(session, lean=True).send("POST", target, (), b"{}")
            )
            assert type(by_lean) is type(by_session)
            assert str(by_lean) == str(by_session)

    _run(test)


def test_a_head_it_cannot_read_is_a_response_error() -> None:
    async def test() -> None:
        garbage = [b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", CLOSE]
        async with _served(lambda _n, _d: garbage) as (_, url), _session() as session:
            failed = await _failure(
                lambda: Upstream(session, lean=True).send("POST", url + "/v1/x", (), b"{}")
            )
            assert isinstance(failed, aiohttp.ClientResponseError)

    _run(test)


# ---- flow control, hang-ups, closing ----------------------------------------------------


@pytest.mark.parametrize("loop", LOOPS)
def test_a_body_not_read_pauses_its_connection_until_it_is(loop: str) -> None:
    size = 4 * 1024 * 1024
    body = bytes(range(256)) * (size // 256)
    head = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % size

    async def test() -> None:
        async with _served(lambda _n, _d: [head + body]) as (_, url), _session() as session:
            upstream = Upstream(session, lean=True)
            answer = await upstream.send("POST", url + "/v1/x", (), b"{}")
            connection = answer._connection
            assert connection is not None
            assert connection.transport is not None
            for _ in range(200):  # bounded: until the reader's buffer is full
                if not connection.transport.is_reading():
                    break
                await asyncio.sleep(0.01)
            assert not connection.transport.is_reading()
            assert await answer.read() == body
            assert connection.transport.is_reading()
            again = await upstream.send("POST", url + "/v1/x", (), b"{}")
            assert again._connection is connection
            again.release()

    _run(test, loop)


def test_a_hang_up_while_the_head_is_awaited_closes_the_connection() -> None:
    async def test() -> None:
        # The read timeout far beyond the wait: only the hang-up can close the connection.
        async with _served(lambda _n, _d: [HOLD]) as (server, url), _session(600.0) as session:
            upstream = Upstream(session, lean=True)
            task = asyncio.ensure_future(upstream.send("POST", url + "/v1/x", (), b"{}"))
            await _until(lambda: len(server.requests) == 1, server)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await _until(lambda: server.ended == 1, server)

    _run(test)


def test_a_stream_released_before_its_end_closes_its_connection() -> None:
    head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    )

    async def test() -> None:
        first = [head + b"8\r\ndata: 1\n\r\n", HOLD]
        async with _served(lambda _n, _d: first) as (server, url), _session(600.0) as session:
            upstream = Upstream(session, lean=True)
            answer = await upstream.send("POST", url + "/v1/x", (), b"{}")
            assert await answer.content.readany() == b"data: 1\n"
            answer.release()
            await _until(lambda: server.ended == 1, server)

    _run(test)


def test_closing_the_session_s_own_connections_closes_idle_ones() -> None:
    async def test() -> None:
        async with _served() as (server, url), _session() as session:
            upstream = Upstream(session, lean=True)
            answer = await upstream.send("POST", url + "/v1/x", (), b"{}")
            assert await answer.read() == b"{}"
            await close_own_connections(session)
            await _until(lambda: server.ended == 1, server)

    _run(test)


# ---- TLS ------------------------------------------------------------------------------


def _certificate(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key, as PEM files."""
    from cryptography import x509  # noqa: PLC0415 - a test dependency
    from cryptography.hazmat.primitives import hashes, serialization  # noqa: PLC0415
    from cryptography.hazmat.primitives.asymmetric import ec  # noqa: PLC0415
    from cryptography.x509.oid import NameOID  # noqa: PLC0415

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "backstay test")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


@pytest.mark.parametrize("loop", LOOPS)
def test_https_goes_through_tls_on_kept_alive_connections(tmp_path: Path, loop: str) -> None:
    cert, key = _certificate(tmp_path)
    served = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    served.load_cert_chain(cert, key)
    trusted = ssl.create_default_context(cafile=str(cert))

    async def test() -> None:
        async with _served(context=served) as (server, url), _session() as session:
            upstream = Upstream(session, lean=True, ssl_context=trusted)
            for _ in range(3):
                answer = await upstream.send("POST", url + "/v1/x", (), b"{}")
                assert isinstance(answer, H1Answer)
                assert await answer.read() == b"{}"
            assert server.connections == 1

    _run(test, loop)


def test_an_untrusted_certificate_fails_as_the_sessions_request_does(tmp_path: Path) -> None:
    cert, key = _certificate(tmp_path)
    served = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    served.load_cert_chain(cert, key)

    async def test() -> None:
        async with _served(context=served) as (_, url), _session() as session:
            target = url + "/v1/x"
            by_session = await _failure(
                lambda: session.request("POST", target, data=b"{}", allow_redirects=False)
            )
            by_lean = await _failure(
                lambda: Upstream(session, lean=True).send("POST", target, (), b"{}")
            )
            assert type(by_lean) is type(by_session)
            assert classify(by_lean).code == classify(by_session).code == "ERR_SSL_CERTIFICATE"

    _run(test)


# ---- through the gateway --------------------------------------------------------------

_STREAM_HEAD: Final = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
)
_FIRST_EVENT: Final = b'data: {"id": "c1", "object": "chat.completion.chunk", "choices": []}\n\n'


@pytest.mark.parametrize("when", ["before_the_head", "mid_stream"])
def test_a_client_hanging_up_on_the_gateway_closes_its_upstream_connection(when: str) -> None:
    from backstay.gateway import Gateway, GatewaySettings, Upstreams  # noqa: PLC0415

    pieces = [HOLD]
    if when == "mid_stream":
        pieces = [_STREAM_HEAD + b"%x\r\n%b\r\n" % (len(_FIRST_EVENT), _FIRST_EVENT), HOLD]
    body = b'{"model": "gpt-5", "stream": true, "messages": [{"role": "user", "content": "hi"}]}'
    request = (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer sk-test\r\n"
        b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%b" % (len(body), body)
    )

    async def test() -> None:
        async with _served(lambda _n, _d: pieces) as (server, url):
            settings = GatewaySettings(port=0, upstreams=Upstreams.all(url))
            async with Gateway(settings) as gateway:
                port = int(gateway.url.rsplit(":", 1)[1])
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.write(request)
                await _until(lambda: len(server.requests) == 1, server)
                if when == "mid_stream":
                    seen = b""
                    while b"chat.completion.chunk" not in seen:  # bounded by the test's 60 s
                        seen += await reader.read(4096)
                        assert seen, "the gateway closed the stream"
                writer.close()
                await _until(lambda: server.ended == 1, server)
                assert len(server.requests) == 1

    _run(test)
