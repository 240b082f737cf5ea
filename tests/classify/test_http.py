"""Raw HTTP material the classifier cannot parse as JSON (``backstay.classify._http``): a body
nested deeper than the interpreter can parse is read as text, and the status and headers
still decide."""

from __future__ import annotations

import datetime as dt
import json
import sys
from typing import Any

import pytest

from backstay import classify, classify_output, classify_response
from backstay.classify._http import find_embedded_json, parse_body

_NOW = dt.datetime(2025, 6, 1, 12, 0, tzinfo=dt.UTC)


def _deep_text(depth: int) -> str:
    return '{"error": ' * depth + "1" + "}" * depth


def _deep_dict(depth: int) -> dict[str, Any]:
    value: Any = 1
    for _ in range(depth):
        value = {"error": value}
    result: dict[str, Any] = value
    return result


@pytest.mark.parametrize("depth", [1_000, 5_000, 100_000])
@pytest.mark.parametrize("as_bytes", [False, True], ids=["str", "bytes"])
def test_a_deeply_nested_body_keeps_the_status_and_retry_after(depth: int, as_bytes: bool) -> None:
    text = _deep_text(depth)
    body: str | bytes = text.encode() if as_bytes else text
    failure = classify_response(429, {"retry-after": "30"}, body, now=_NOW)
    assert failure.code == "ERR_HTTP_429_RATE_LIMITED"
    assert failure.retry_after_s == 30.0
    assert failure.details["source"] == "status"


def test_a_deeply_nested_parsed_body_keeps_the_status_and_retry_after() -> None:
    failure = classify_response(429, {"retry-after": "30"}, _deep_dict(5_000), now=_NOW)
    assert failure.code == "ERR_HTTP_429_RATE_LIMITED"
    assert failure.retry_after_s == 30.0


def test_a_body_the_parser_could_read_higher_up_is_read_as_text_deep_in_a_call_stack() -> None:
    """The parser's limit counts the frames above it: a body that parses at the top of a
    program may not deep inside one (an agent framework's stack)."""
    limit = sys.getrecursionlimit()
    body = _deep_text(limit * 6 // 10)
    assert json.loads(body)  # near the top of the stack, it parses

    def nested(levels: int) -> Any:
        if levels == 0:
            with pytest.raises(RecursionError):
                json.loads(body)  # here it does not
            return classify_response(503, {"retry-after": "4"}, body, now=_NOW)
        return nested(levels - 1)

    failure = nested(limit // 2)
    assert failure.code == "ERR_HTTP_503_UNAVAILABLE"
    assert failure.retry_after_s == 4.0


def test_a_deeply_nested_error_event_in_a_stream_is_not_a_crash() -> None:
    stream = f"event: error\ndata: {_deep_text(2_000)}\n\n"
    failure = classify_response(200, {}, stream, now=_NOW)
    assert failure.details["source"] != "classifier_error"


def test_a_deeply_nested_body_inside_an_exception_message_keeps_the_named_status() -> None:
    failure = classify(Exception("Error code: 429 - " + _deep_text(2_000)), now=_NOW)
    assert failure.details.get("source") != "classifier_error"
    assert failure.code == "ERR_LLM_RATE_LIMITED"


def test_deeply_nested_agent_output_is_not_a_crash() -> None:
    failure = classify_output(_deep_text(2_000), agent="claude-code", exit_code=1, now=_NOW)
    assert failure.details["source"] != "classifier_error"
    assert failure.code == "ERR_AGENT_FAILED"


def test_an_error_object_after_another_object_in_text_is_found() -> None:
    inner = {"error": {"type": "overloaded_error", "message": "Overloaded"}}
    text = "retrying {attempt: 2} after: " + json.dumps(inner)
    assert find_embedded_json(text) == inner


def test_text_before_an_embedded_object_is_searched_only_so_far() -> None:
    inner = {"error": {"type": "overloaded_error", "message": "Overloaded"}}
    text = "{" + "x" * 100_000 + " " + json.dumps(inner)
    assert find_embedded_json(text) is None


def test_a_body_is_read_up_to_its_bound() -> None:
    parsed, text = parse_body("<html>" + "a" * 1_000_000)
    assert parsed is None
    assert len(text) == 200_000


@pytest.mark.parametrize(
    ("status", "code"),
    [("429", "ERR_HTTP_429_RATE_LIMITED"), (" 503 ", "ERR_HTTP_503_UNAVAILABLE")],
)
def test_a_status_given_as_text_is_read_as_a_number(status: str, code: str) -> None:
    failure = classify_response(status, {"retry-after": "3"}, None, now=_NOW)  # type: ignore[arg-type]
    assert failure.code == code
    assert failure.retry_after_s == 3.0


@pytest.mark.parametrize("text", ["abc", "²", "9" * 5_000])
def test_a_status_or_code_that_is_no_number_is_no_status(text: str) -> None:
    failure = classify_response(text, {}, None, now=_NOW)  # type: ignore[arg-type]
    assert failure.details["source"] != "classifier_error"
    assert failure.status is None
    body = {"error": {"code": text, "message": "upstream failed"}}
    assert classify_response(500, {}, body, now=_NOW).code == "ERR_HTTP_500_INTERNAL"
