"""Failures hidden in whole successful streams: every event is read, not only the last."""

from __future__ import annotations

import importlib
import json
from typing import Any

import pytest

from backstay import FailureKind, check_response

# The package, not the function ``backstay.classify`` that shadows it as an attribute.
classify_module = importlib.import_module("backstay.classify")


def _sse(*events: tuple[str, dict[str, object]]) -> str:
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)


def test_a_refusal_in_an_anthropic_message_delta_is_found_in_the_full_stream() -> None:
    # The Messages streaming format: stop_reason arrives in message_delta, before message_stop.
    stream = _sse(
        ("message_start", {"type": "message_start", "message": {"stop_reason": None}}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "refusal"}}),
        ("message_stop", {"type": "message_stop"}),
    )
    failure = check_response(
        200, {"content-type": "text/event-stream"}, stream, provider="anthropic"
    )
    assert failure is not None
    assert (failure.kind, failure.code) == (FailureKind.CONTENT_POLICY, "ERR_LLM_REFUSAL")
    assert failure.message


def test_a_clean_anthropic_stream_hides_no_failure() -> None:
    stream = _sse(
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}}),
        ("message_stop", {"type": "message_stop"}),
    )
    assert check_response(200, {}, stream, provider="anthropic") is None


def test_a_safety_stop_in_a_later_gemini_chunk_is_found() -> None:
    # streamGenerateContent without alt=sse returns a JSON array of chunks.
    chunks = json.dumps(
        [
            {"candidates": [{"content": {"parts": [{"text": "Sure"}]}}]},
            {"candidates": [{"finishReason": "SAFETY"}]},
        ]
    )
    failure = check_response(200, {}, chunks, provider="gemini")
    assert failure is not None
    assert failure.code == "ERR_LLM_CONTENT_FILTER"


def test_an_error_chunk_after_content_in_a_gemini_array_is_classified() -> None:
    chunks = json.dumps(
        [
            {"candidates": [{"content": {"parts": [{"text": "Sure"}]}}]},
            {
                "error": {
                    "code": 503,
                    "message": "The model is overloaded.",
                    "status": "UNAVAILABLE",
                }
            },
        ]
    )
    failure = check_response(200, {}, chunks, provider="gemini")
    assert failure is not None
    assert failure.kind is FailureKind.SERVER_ERROR


def _long_stream(ending: tuple[str, dict[str, object]], *, start: str = "") -> str:
    delta = ("content_block_delta", {"type": "content_block_delta", "delta": {"text": "word "}})
    return start + _sse(delta) * 60_000 + _sse(ending, ("message_stop", {"type": "message_stop"}))


@pytest.mark.parametrize("as_bytes", [False, True], ids=["str", "bytes"])
def test_a_refusal_at_the_end_of_a_long_stream_is_found(as_bytes: bool) -> None:
    refusal = ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "refusal"}})
    stream = _long_stream(refusal)
    failure = check_response(200, {}, stream.encode() if as_bytes else stream)
    assert failure is not None
    assert failure.code == "ERR_LLM_REFUSAL"


def test_a_blocked_prompt_at_the_start_of_a_long_stream_is_found() -> None:
    blocked = {"promptFeedback": {"blockReason": "SAFETY"}}
    end_turn = ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}})
    stream = _long_stream(end_turn, start=f"data: {json.dumps(blocked)}\n\n")
    failure = check_response(200, {}, stream, provider="gemini")
    assert failure is not None
    assert failure.kind is FailureKind.CONTENT_POLICY


def test_only_the_two_ends_of_a_long_stream_are_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    read: list[int] = []
    events = classify_module.sse_events

    def counting(text: str) -> list[tuple[str, Any]]:
        read.append(len(text))
        return events(text)

    monkeypatch.setattr(classify_module, "sse_events", counting)
    end_turn = ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}})
    assert check_response(200, {}, _long_stream(end_turn)) is None
    assert read == [2 * 64 * 1024 + 1]  # once, not once per provider's check
