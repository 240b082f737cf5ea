"""The gateway's own HTTP/1.1 server (``backstay.gateway.http1``), read and written on raw
sockets against a real gateway and the fake provider: keep-alive, pipelining, framing,
what it refuses, and the connections it hands to aiohttp's server."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Final

import pytest
from tests.gateway.helpers import CANARY_KEY, FAST_POLICY, claude, served

from backstay.fakeprovider import Fault, FaultKind
from backstay.gateway import http1

BOUND_S: Final = 10.0
BODY: Final = json.dumps(
    {
        "model": "claude-sonnet-4-6",
        "max_tokens": 20,
        "messages": [{"role": "user", "content": "hi"}],
    }
).encode()


def _request(
    *, body: bytes = BODY, extra: str = "", version: str = "1.1", framing: str | None = None
) -> bytes:
    length = f"Content-Length: {len(body)}\r\n" if framing is None else framing
    head = (
        f"POST /v1/messages HTTP/{version}\r\nHost: gw\r\nx-api-key: {CANARY_KEY}\r\n"
        f"anthropic-version: 2023-06-01\r\ncontent-type: application/json\r\n{length}{extra}\r\n"
    )
    return head.encode() + body


class _Reader:
    """Answers read off one socket, bounded in time."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = b""
        sock.settimeout(BOUND_S)

    def _more(self) -> bool:
        data = self.sock.recv(65536)
        self.buffer += data
        return bool(data)

    def answer(self) -> tuple[int, dict[str, str], bytes]:
        """The next whole answer: status, headers (lower-cased names, each once), body."""
        while b"\r\n\r\n" not in self.buffer:
            if not self._more():
                raise AssertionError(f"closed before an answer: {self.buffer!r}")
        head, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        status = int(lines[0].split(" ")[1])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            assert name.strip().lower() not in headers, f"{name} twice"
            headers[name.strip().lower()] = value.strip()
        if headers.get("transfer-encoding") == "chunked":
            return status, headers, self._chunked()
        length = int(headers["content-length"])
        while len(self.buffer) < length:
            if not self._more():
                raise AssertionError("closed mid-body")
        body, self.buffer = self.buffer[:length], self.buffer[length:]
        return status, headers, body

    def _chunked(self) -> bytes:
        body = b""
        while True:
            while b"\r\n" not in self.buffer:
                if not self._more():
                    raise AssertionError("closed mid-stream")
            size_line, _, self.buffer = self.buffer.partition(b"\r\n")
            size = int(size_line, 16)
            while len(self.buffer) < size + 2:
                if not self._more():
                    raise AssertionError("closed mid-chunk")
            chunk, self.buffer = self.buffer[:size], self.buffer[size + 2 :]
            if size == 0:
                return body
            body += chunk

    def closed(self) -> bool:
        """Whether the server closes the connection (within the bound)."""
        try:
            return not self._more()
        except (ConnectionResetError, TimeoutError):
            return False


def _connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=BOUND_S)


def test_two_requests_on_one_kept_alive_connection_are_both_answered(tmp_path: Path) -> None:
    with served(tmp_path) as s, _connect(s.url) as sock:
        reader = _Reader(sock)
        for _ in range(2):
            sock.sendall(_request())
            status, headers, body = reader.answer()
            assert status == 200
            assert json.loads(body)["type"] == "message"
            assert headers["x-backstay-attempts"] == "1"
            assert "date" in headers
            assert "connection" not in headers
        assert s.fake.stats().requests == 2


def test_pipelined_requests_are_answered_in_order(tmp_path: Path) -> None:
    with served(tmp_path) as s, _connect(s.url) as sock:
        bad = b"GET /v1/nowhere HTTP/1.1\r\nHost: gw\r\n\r\n"
        sock.sendall(_request() + bad + _request())
        reader = _Reader(sock)
        statuses = [reader.answer()[0] for _ in range(3)]
        assert statuses == [200, 404, 200]


def test_connection_close_is_honoured(tmp_path: Path) -> None:
    with served(tmp_path) as s, _connect(s.url) as sock:
        sock.sendall(_request(extra="Connection: close\r\n"))
        reader = _Reader(sock)
        status, headers, _ = reader.answer()
        assert status == 200
        assert headers["connection"] == "close"
        assert reader.closed()


@pytest.mark.parametrize(
    ("request_bytes", "why"),
    [
        (_request(framing="Transfer-Encoding: chunked\r\n", body=b""), "a chunked body"),
        (_request(version="1.0"), "HTTP/1.0"),
    ],
)
def test_what_it_does_not_read_is_served_by_aiohttp(
    tmp_path: Path, request_bytes: bytes, why: str
) -> None:
    if b"chunked" in request_bytes:
        request_bytes += b"%x\r\n%b\r\n0\r\n\r\n" % (len(BODY), BODY)
    with served(tmp_path) as s, _connect(s.url) as sock:
        sock.sendall(request_bytes)
        status, _, body = _Reader(sock).answer()
        assert status == 200, why
        assert json.loads(body)["type"] == "message"
        assert s.fake.stats().requests == 1


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        (_request(extra="bad header line\r\n"), 400),
        (_request(extra="x-bad: a\x01b\r\n"), 400),
        (_request(framing="Content-Length: 5\r\nContent-Length: 6\r\n"), 400),
        (_request(framing="Content-Length: -1\r\n"), 400),
        (b"POST  /v1/messages HTTP/1.1\r\n\r\n", 400),
        (_request(extra=f"x-long: {'a' * (http1.MAX_HEAD_BYTES + 1)}\r\n"), 431),
        (_request(framing="Content-Length: 99999999\r\n", body=b""), 413),
    ],
    ids=[
        "no-colon",
        "control-char",
        "two-lengths",
        "negative-length",
        "request-line",
        "head",
        "body",
    ],
)
def test_a_request_it_cannot_read_is_refused_and_the_connection_closed(
    tmp_path: Path, request_bytes: bytes, status: int
) -> None:
    with served(tmp_path, max_request_bytes=1_000_000) as s, _connect(s.url) as sock:
        sock.sendall(request_bytes)
        reader = _Reader(sock)
        got, headers, _ = reader.answer()
        assert got == status
        assert headers["connection"] == "close"
        assert reader.closed()
        assert s.fake.stats().requests == 0


def test_a_streamed_answer_is_sent_chunked(tmp_path: Path) -> None:
    body = json.loads(BODY)
    body["stream"] = True
    with served(tmp_path, buffer_streams=False) as s, _connect(s.url) as sock:
        sock.sendall(_request(body=json.dumps(body).encode()))
        status, headers, data = _Reader(sock).answer()
        assert status == 200
        assert headers["content-type"].startswith("text/event-stream")
        assert headers["transfer-encoding"] == "chunked"
        assert b"event: message_stop" in data


def test_an_idle_connection_is_closed_after_the_keepalive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(http1, "KEEPALIVE_S", 0.2)
    with served(tmp_path) as s, _connect(s.url) as sock:
        sock.sendall(_request())
        reader = _Reader(sock)
        assert reader.answer()[0] == 200
        started = time.monotonic()
        assert reader.closed()
        assert time.monotonic() - started < BOUND_S


def test_the_sdk_still_works_after_a_refused_connection(tmp_path: Path) -> None:
    with served(tmp_path) as s:
        with _connect(s.url) as sock:
            sock.sendall(b"GARBAGE\r\n\r\n")
            assert _Reader(sock).answer()[0] == 400
        assert claude(s.url)


def test_a_connection_is_handed_to_aiohttp_after_requests_it_served(tmp_path: Path) -> None:
    """A kept-alive connection whose second request is one it does not read (an admin
    path): aiohttp's server answers it and the requests after it."""
    with served(tmp_path) as s, _connect(s.url) as sock:
        admin = b"GET /_backstay/runs HTTP/1.1\r\nHost: gw\r\n\r\n"
        sock.sendall(_request() + admin + _request())
        reader = _Reader(sock)
        first, handed, last = (reader.answer() for _ in range(3))
        assert first[0] == 200
        assert handed[0] == 404  # no run table: not an endpoint it serves
        assert b"is not a provider endpoint" in handed[2]
        assert last[0] == 200
        assert "server" in last[1]  # aiohttp's answer
        assert s.fake.stats().requests == 2


def test_stopping_cuts_a_request_still_being_answered_and_ends(tmp_path: Path) -> None:
    """A request in a long backoff when the gateway stops: its connection is closed and
    the stop ends within the grace, with no task left running."""
    policy = FAST_POLICY.derive(initial_delay_s=600.0, max_delay_s=600.0, deadline_s=3600.0)
    with (
        served(tmp_path, Fault(kind=FaultKind.SERVER_ERROR), policy=policy) as s,
        _connect(s.url) as sock,
    ):
        sock.sendall(_request())
        bound = time.monotonic() + BOUND_S
        while s.fake.stats().requests < 1 and time.monotonic() < bound:
            time.sleep(0.02)
        assert s.gateway.active_requests == 1  # in its backoff
        started = time.monotonic()
        s.gateway.stop()
        stopped_in = time.monotonic() - started
        assert _Reader(sock).closed()
        assert s.fake.stats().requests == 1
    assert stopped_in < BOUND_S


def test_a_request_the_proxy_fails_to_answer_gets_a_500_and_the_connection_closes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from backstay.gateway.proxy import Proxy  # noqa: PLC0415 - the part made to fail

    async def broken(self: Proxy, request: object) -> object:
        raise RuntimeError("a defect")

    reported: list[str] = []
    monkeypatch.setattr(Proxy, "respond", broken)  # before a connection takes it
    with served(tmp_path) as s, _connect(s.url) as sock:
        loop = s.gateway._loop  # the serving loop: its exception handler
        assert loop is not None
        loop.set_exception_handler(lambda _, context: reported.append(context["message"]))
        sock.sendall(_request())
        reader = _Reader(sock)
        status, headers, body = reader.answer()
        assert status == 500
        assert headers["connection"] == "close"
        assert body == b"500 Internal Server Error"
        assert reader.closed()
    assert reported == ["the gateway failed to answer a request"]
