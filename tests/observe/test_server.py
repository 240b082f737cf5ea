"""``MetricsServer`` itself, over real sockets on 127.0.0.1: idle and slow clients cost a
socket for a few seconds and never a thread, connections beyond the bound are answered
503, a bearer token guards every path, and the little HTTP it speaks."""

from __future__ import annotations

import contextlib
import http.client
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest
from tests.observe.support import finished_batch

from backstay.errors import ConfigError
from backstay.observe.server import MetricsServer, loopback_only

IDLE_SOCKETS: Final = 200
# Every wait of these tests ends by this (a server that never closes fails, not hangs).
WAIT_S: Final = 10.0
TOKEN: Final = "canary-token-7f3a"


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return finished_batch(tmp_path_factory.mktemp("batch"))


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


def _request(
    server: MetricsServer,
    path: str,
    *,
    method: str = "GET",
    headers: dict[str, str] | None = None,
) -> tuple[int, http.client.HTTPMessage, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=WAIT_S)
    try:
        conn.request(method, path, headers=headers or {})
        reply = conn.getresponse()
        return reply.status, reply.headers, reply.read()
    finally:
        conn.close()


def _raw(server: MetricsServer, data: bytes) -> bytes:
    """What the server answers to ``data`` sent as is, until it closes."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=WAIT_S) as sock:
        sock.sendall(data)
        return _read_to_end(sock)


def _read_to_end(sock: socket.socket) -> bytes:
    chunks = []
    with contextlib.suppress(ConnectionResetError):
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def _wait_until(predicate: object, what: str) -> None:
    assert callable(predicate)
    deadline = time.monotonic() + WAIT_S
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"not within {WAIT_S} s: {what}")
        time.sleep(0.02)


@contextlib.contextmanager
def _idle(server: MetricsServer, count: int) -> Iterator[list[socket.socket]]:
    """``count`` connections that each sent part of a request line and then nothing."""
    socks: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.create_connection(("127.0.0.1", server.port), timeout=WAIT_S)
            socks.append(sock)
            sock.sendall(b"GET /metr")
        yield socks
    finally:
        for sock in socks:
            sock.close()


def _closed_by_peer(sock: socket.socket) -> bool:
    try:
        return sock.recv(1, socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except ConnectionResetError:
        return True


def test_idle_connections_take_no_thread_and_a_scrape_is_still_answered(state: Path) -> None:
    with MetricsServer(state, request_timeout_s=3.0) as server:
        assert _request(server, "/metrics")[0] == 200  # its reader threads exist now
        before = _threads()
        with _idle(server, IDLE_SOCKETS):
            _wait_until(lambda: server.connections == IDLE_SOCKETS, "all sockets accepted")
            assert _threads() <= before
            started = time.monotonic()
            status, _, body = _request(server, "/metrics")
            assert status == 200
            assert b'backstay_tasks{state="failed"} 2' in body
            assert time.monotonic() - started < 2.0
            assert _threads() <= before


def test_idle_connections_are_closed_after_the_request_timeout(state: Path) -> None:
    with MetricsServer(state, request_timeout_s=1.0) as server, _idle(server, 20) as socks:
        started = time.monotonic()
        _wait_until(lambda: all(_closed_by_peer(s) for s in socks), "idle sockets closed")
        assert 0.8 <= time.monotonic() - started <= 1.0 + 3.0
        _wait_until(lambda: server.connections == 0, "connections forgotten")


def test_a_request_trickled_a_byte_at_a_time_is_cut_off_at_the_timeout(state: Path) -> None:
    request = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 200
    with (
        MetricsServer(state, request_timeout_s=1.0) as server,
        socket.create_connection(("127.0.0.1", server.port), timeout=WAIT_S) as sock,
    ):
        started = time.monotonic()
        for byte in request:
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                break
            if _closed_by_peer(sock):
                break
            time.sleep(0.05)
        else:
            pytest.fail("the server kept a trickling request open for its whole length")
        assert time.monotonic() - started < 1.0 + 2.0


def test_a_connection_beyond_the_bound_is_answered_503(state: Path) -> None:
    with MetricsServer(state, max_connections=4, request_timeout_s=5.0) as server:
        with _idle(server, 4):
            _wait_until(lambda: server.connections == 4, "idle sockets accepted")
            with socket.create_connection(("127.0.0.1", server.port), timeout=WAIT_S) as sock:
                answer = _read_to_end(sock)
            assert answer.startswith(b"HTTP/1.1 503 Service Unavailable\r\n")
            assert b"too many connections" in answer
        _wait_until(lambda: server.connections == 0, "idle sockets gone")
        assert _request(server, "/healthz")[0] == 200


def test_without_the_token_every_path_is_401(state: Path) -> None:
    with MetricsServer(state, token=TOKEN) as server:
        for path in ("/metrics", "/healthz", "/readyz", "/nothing"):
            status, headers, body = _request(server, path)
            assert status == 401, path
            assert headers["WWW-Authenticate"] == 'Bearer realm="backstay"'
            assert TOKEN.encode() not in body


def test_a_wrong_token_is_401_and_never_echoed(state: Path) -> None:
    with MetricsServer(state, token=TOKEN) as server:
        for given in ("Bearer wrong", f"Basic {TOKEN}", TOKEN, f"Bearer {TOKEN}x"):
            status, _, body = _request(server, "/metrics", headers={"Authorization": given})
            assert status == 401, given
            assert TOKEN.encode() not in body
            assert b"wrong" not in body


def test_the_token_opens_every_path(state: Path) -> None:
    with MetricsServer(state, token=TOKEN) as server:
        auth = {"Authorization": f"Bearer {TOKEN}"}
        assert _request(server, "/metrics", headers=auth)[0] == 200
        assert _request(server, "/healthz", headers=auth)[0] == 200
        assert _request(server, "/readyz", headers={"authorization": f"bearer {TOKEN}"})[0] == 200


def test_an_empty_token_is_refused() -> None:
    with pytest.raises(ConfigError, match="empty"):
        MetricsServer(".", token="  ")


def test_head_answers_the_headers_without_the_body(state: Path) -> None:
    with MetricsServer(state) as server:
        answer = _raw(server, b"HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK\r\n")
    assert b"Content-Length: " in head
    assert body == b""


def test_other_methods_are_405(state: Path) -> None:
    with MetricsServer(state) as server:
        status, headers, _ = _request(server, "/metrics", method="POST")
    assert (status, headers["Allow"]) == (405, "GET, HEAD")


def test_a_malformed_request_line_is_400(state: Path) -> None:
    with MetricsServer(state) as server:
        assert _raw(server, b"HELLO\r\n\r\n").startswith(b"HTTP/1.1 400 ")


def test_an_overlong_request_line_is_431(state: Path) -> None:
    with MetricsServer(state) as server:
        answer = _raw(server, b"GET /" + b"a" * 20_000 + b" HTTP/1.1\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 431 ")


def test_the_query_string_is_ignored(state: Path) -> None:
    with MetricsServer(state) as server:
        assert _request(server, "/healthz?verbose=1")[0] == 200


def test_loopback_only_tells_loopback_addresses_from_the_rest() -> None:
    assert loopback_only("127.0.0.1")
    assert loopback_only("::1")
    assert loopback_only("localhost")
    assert not loopback_only("0.0.0.0")  # noqa: S104 - the address under test, not bound
    assert not loopback_only("")
    assert not loopback_only("192.0.2.1")
