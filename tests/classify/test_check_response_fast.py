"""``check_response`` answers a success whose parsed body shows no failure without reading
the rest of the response: its answer equals the one of the response read whole
(``_check_whole``) for every body of the field cases and of the success shapes, at every
status below and above 400 and for every provider."""

from __future__ import annotations

import datetime as dt
import importlib
import json
from pathlib import Path
from typing import Any

import pytest

from backstay.classify import check_response

classify = importlib.import_module("backstay.classify")

DATA = Path(__file__).with_name("data")
NOW = dt.datetime(2026, 9, 20, 12, 0, tzinfo=dt.UTC)


def _bodies() -> list[object]:
    bodies: list[object] = []
    for name in ("field_provider_responses.json", "wide_provider_responses.json"):
        cases = json.loads((DATA / name).read_text(encoding="utf-8"))
        bodies.extend(case["body"] for case in cases)
    return bodies


def _message(**changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "Hello! status 429 error code: 500"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 3, "output_tokens": 12},
    }
    body.update(changes)
    return body


class _Unprintable:
    def __str__(self) -> str:
        raise KeyboardInterrupt


SUCCESS_SHAPES: list[object] = [
    _message(),
    _message(stop_reason="refusal"),
    _message(stop_reason="max_tokens"),
    {"choices": [{"finish_reason": "stop", "message": {"content": "hi"}}]},
    {"choices": [{"finish_reason": "content_filter", "message": {"content": ""}}]},
    {"candidates": [{"finishReason": "SAFETY"}]},
    {"promptFeedback": {"blockReason": "SAFETY"}},
    {"candidates": [{"finishReason": "STOP", "content": {"parts": [{"text": "ok"}]}}]},
    {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    {"error": "a message"},
    {"error": True, "message": "bad"},
    {"message": "Rate limited", "code": 429},
    {"data": {"statusCode": 500, "message": "x"}},
    {"response": {"error": {"code": "server_error", "message": "x"}}},
    {"error_type": "x"},
    {},
    {"weird": _Unprintable()},
    {"text": {"nested": [1, 2, {"error": {"message": "inner"}}]}},
]

STATUSES: list[Any] = [200, 201, 204, 302, 399, 400, 429, 503, None, "200", True]
PROVIDERS: list[Any] = [None, "anthropic", "openai", "gemini", "Google", "other", 7]


@pytest.mark.parametrize("body", [*_bodies(), *SUCCESS_SHAPES])
def test_the_answer_equals_that_of_the_response_read_whole(body: object) -> None:
    for status in STATUSES:
        for provider in PROVIDERS:
            fast = check_response(status, None, body, provider=provider, now=NOW)
            whole = classify._check_whole(status, None, body, provider=provider, now=NOW)
            assert fast == whole, (status, provider)


def test_a_clean_success_is_answered_without_reading_the_text() -> None:
    assert check_response(200, None, _message()) is None
    found = check_response(200, None, _message(stop_reason="refusal"), provider="anthropic")
    assert found is not None
    assert found.details["source"] == "success_body"
