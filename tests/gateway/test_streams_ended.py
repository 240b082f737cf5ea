"""A buffered stream that ends cleanly but without its provider's last event
(``sse.ended``) was cut short: the gateway retries it, and hands the client the last one
as it came when every attempt is cut. The upstream is a real HTTP server of the test's
own (the fake provider has no such fault): each answer an SSE body ended by closing the
connection."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

import pytest
from tests.gateway.helpers import (
    FAST_POLICY,
    chat,
    claude,
    claude_stream_bytes,
    gemini,
    responses,
    served,
)

from backstay.gateway import Gateway, GatewaySettings, Upstreams

START: Final = (
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1",'
    b'"type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,'
    b'"usage":{"input_tokens":3,"output_tokens":0}}}\n\n'
    b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
    b'"content_block":{"type":"text","text":""}}\n\n'
    b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
    b'"delta":{"type":"text_delta","text":"Hello"}}\n\n'
)
END: Final = (
    b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
    b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},'
    b'"usage":{"output_tokens":1}}\n\n'
    b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
)


@contextmanager
def _upstream(bodies: list[bytes]) -> Iterator[tuple[str, list[bytes]]]:
    """A server answering each POST with the next of ``bodies`` (the last one again once
    they are used up) as an SSE stream ended by closing the connection; its URL and the
    bodies it sent."""
    sent: list[bytes] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", "0")))
            body = bodies[min(len(sent), len(bodies) - 1)]
            sent.append(body)
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            return None

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", sent
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def _gateway(upstream: str, *, buffer_streams: bool = True) -> Gateway:
    settings = GatewaySettings(
        port=0,
        upstreams=Upstreams.all(upstream),
        buffer_streams=buffer_streams,
        policy=FAST_POLICY.derive(max_attempts=3),
    )
    return Gateway(settings)


def test_a_buffered_stream_cut_short_is_retried_until_it_is_whole() -> None:
    with _upstream([START, START + END]) as (url, sent), _gateway(url) as gateway:
        answer = claude_stream_bytes(gateway.url)
    assert answer.status_code == 200
    assert answer.content == START + END
    assert answer.headers["x-backstay-attempts"] == "2"
    assert len(sent) == 2


def test_a_buffered_stream_cut_short_every_time_is_handed_over_as_it_came() -> None:
    with _upstream([START]) as (url, sent), _gateway(url) as gateway:
        answer = claude_stream_bytes(gateway.url)
    assert answer.status_code == 200
    assert answer.content == START
    assert answer.headers["x-backstay-attempts"] == "3"
    assert len(sent) == 3


def test_a_passed_through_stream_is_not_held_for_its_end() -> None:
    with (
        _upstream([START]) as (url, sent),
        _gateway(url, buffer_streams=False) as gateway,
    ):
        answer = claude_stream_bytes(gateway.url)
    assert answer.content == START
    assert len(sent) == 1


@pytest.mark.parametrize("call", [claude, chat, responses, gemini])
def test_each_providers_whole_stream_is_ended_and_sent_once(tmp_path: Path, call: object) -> None:
    with served(tmp_path, buffer_streams=True) as s:
        text = call(s.url, stream=True)  # type: ignore[operator]
        stats = s.fake.stats()
    assert text
    assert stats.requests == 1
