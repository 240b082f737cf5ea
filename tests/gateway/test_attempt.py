"""Whether an upstream answer failed (``backstay.gateway.attempt.failure_of``): a clean 2xx
JSON answer is told apart without the classifier's full reading, and every answer gets the
verdict ``check_response`` gives it."""

from __future__ import annotations

import json

import pytest

from backstay.classify import check_response
from backstay.failure import Failure
from backstay.gateway.attempt import _clean_success, failure_of

OPENAI_CHAT = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "model": "gpt-5",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello."}}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
}
ANTHROPIC_MESSAGE = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [{"type": "text", "text": "Hello."}],
    "stop_reason": "end_turn",
    "usage": {"input_tokens": 3, "output_tokens": 2},
}
GEMINI = {
    "candidates": [{"content": {"parts": [{"text": "Hello."}]}, "finishReason": "STOP"}],
    "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 2},
}
REFUSAL = {
    **OPENAI_CHAT,
    "choices": [
        {
            "index": 0,
            "finish_reason": "content_filter",
            "message": {"role": "assistant", "content": None, "refusal": "I can't."},
        }
    ],
}
CLEAN = [OPENAI_CHAT, ANTHROPIC_MESSAGE, GEMINI, REFUSAL]
# 2xx bodies the classifier reads as an error's shape: each is read whole.
ERROR_SHAPED = [
    {"error": {"message": "Overloaded", "type": "overloaded_error"}},
    {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    {"error": "rate limited"},
    {"message": "Too many requests", "code": "rate_limit_exceeded"},
    {"error_type": "rate_limit", "error_code": 429},
    {"data": {"statusCode": 429, "message": "Too many requests"}},
    {"id": "resp_1", "object": "response", "status": "completed", "error": None},
    {"response": {"error": {"code": "server_error", "message": "failed"}}},
]


def _verdict(status: int, body: bytes) -> Failure | None:
    """What ``failure_of`` must answer: ``check_response``'s failure, less a success
    body's own report (a refusal is an answer)."""
    found = check_response(status, {"content-type": "application/json"}, body, provider="openai")
    if found is not None and status < 400 and found.details.get("source") == "success_body":
        return None
    return found


@pytest.mark.parametrize("data", CLEAN)
def test_a_clean_success_is_told_without_the_classifier(data: dict[str, object]) -> None:
    body = json.dumps(data).encode()
    assert _clean_success(200, body)
    assert failure_of(200, {}, body, "openai") is None
    assert _verdict(200, body) is None


@pytest.mark.parametrize("data", ERROR_SHAPED)
def test_an_error_shaped_body_is_read_by_the_classifier(data: dict[str, object]) -> None:
    body = json.dumps(data).encode()
    assert not _clean_success(200, body)
    headers = {"content-type": "application/json"}
    assert failure_of(200, headers, body, "openai") == _verdict(200, body)


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (200, b"not json"),
        (200, b"[1, 2]"),
        (200, b'  {"id": "x"}'),  # not at the first byte: read whole
        (200, b"{" * 5000 + b"}" * 5000),  # nested too deep for the parser
        (429, json.dumps(OPENAI_CHAT).encode()),
        (500, b'{"id": "x"}'),
        (304, b'{"id": "x"}'),
        (200, b'{"id": "' + b"x" * 200_001 + b'"}'),  # past what the classifier reads whole
    ],
)
def test_anything_else_is_read_by_the_classifier(status: int, body: bytes) -> None:
    assert not _clean_success(status, body)
    headers = {"content-type": "application/json"}
    assert failure_of(status, headers, body, "openai") == _verdict(status, body)


def test_an_error_status_with_a_clean_body_still_fails() -> None:
    found = failure_of(503, {}, json.dumps(OPENAI_CHAT).encode(), "openai")
    assert found is not None
    assert found.status == 503
