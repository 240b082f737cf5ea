"""Which events of a stream are its errors (``backstay.gateway.sse``)."""

from __future__ import annotations

import pytest

from backstay.gateway.sse import ended, error_event

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


@pytest.mark.parametrize(
    "last",
    [
        b'event: message_stop\ndata: {"type":"message_stop"}\n\n',
        b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
        b'event: ping\ndata: {"type":"ping"}\n\n',
        b"data: [DONE]\n\n",
        b'event: response.completed\ndata: {"type":"response.completed","response":{}}\n\n',
        b'data: {"type":"response.incomplete","response":{}}\n\n',
        b'data: {"candidates":[{"content":{"parts":[{"text":"."}]},'
        b'"finishReason":"STOP"}]}\r\n\r\n',
    ],
    ids=["anthropic", "anthropic-then-ping", "chat", "responses", "responses-incomplete", "gemini"],
)
def test_a_stream_with_its_providers_last_event_has_ended(last: bytes) -> None:
    assert ended(MESSAGE_START + last)


@pytest.mark.parametrize(
    "body",
    [
        MESSAGE_START,
        b'data: {"choices":[{"delta":{"content":"[DONE]"}}]}\n\n',
        b'data: {"candidates":[{"content":{"parts":[{"text":"finishReason"}]}}]}\n\n',
        b'event: message_stop\ndata: {"type":"message_stop"}\n\n' + MESSAGE_START * 4,
        b"",
    ],
    ids=["anthropic-cut", "chat-text-done", "gemini-text", "stop-long-before-the-end", "empty"],
)
def test_a_stream_without_its_last_event_has_not_ended(body: bytes) -> None:
    assert not ended(body)
