"""Which events of a stream are its errors (``backstay.gateway.sse``)."""

from __future__ import annotations

import pytest

from backstay.gateway.sse import error_event

MESSAGE_START = (
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1",'
    b'"type":"message","role":"assistant","content":[],"usage":{"input_tokens":3}}}\n\n'
)


def test_an_anthropic_message_start_is_not_an_error() -> None:
    assert error_event(MESSAGE_START) is None


def test_an_anthropic_error_event_is_found_after_other_events() -> None:
    error = (
        b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error",'
        b'"message":"Overloaded"}}\n\n'
    )
    found = error_event(MESSAGE_START + error)
    assert found is not None
    assert found.startswith("event: error")


@pytest.mark.parametrize(
    "chunk",
    [
        b'data: {"error":{"message":"boom","type":"server_error"}}\n\n',
        b'event: error\r\ndata: {"type":"error","code":"server_error","message":"x"}\r\n\r\n',
        b'data: {"type":"response.failed","response":{"error":{"code":"server_error"}}}\n\n',
        b'data: {"error": {"code": 503, "status": "UNAVAILABLE", "message": "x"}}\n\n',
    ],
    ids=["openai-chat", "responses-error", "responses-failed", "gemini"],
)
def test_each_apis_error_chunk_is_found(chunk: bytes) -> None:
    assert error_event(chunk) is not None


def test_a_chunk_that_only_mentions_error_in_its_text_is_not_one() -> None:
    chunk = b'data: {"choices":[{"delta":{"content":"no error here"}}],"error":null}\n\n'
    assert error_event(chunk) is None
