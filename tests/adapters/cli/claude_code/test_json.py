"""Reading Claude Code's final result object: the answer and the usage."""

from __future__ import annotations

import json

from backstay.adapters.cli.claude_code._json import ResultReader, answer_of, usage_of
from backstay.adapters.usage import Usage

RESULT = {
    "type": "result",
    "subtype": "success",
    "is_error": False,
    "num_turns": 2,
    "result": "All tests pass.",
    "total_cost_usd": 0.0123,
    "usage": {
        "input_tokens": 12,
        "output_tokens": 340,
        "cache_creation_input_tokens": 2000,
        "cache_read_input_tokens": 15000,
    },
}


def test_the_reader_keeps_the_last_result_object() -> None:
    reader = ResultReader()
    for line in [
        "plain text",
        '{"type": "assistant", "message": {}}',
        json.dumps({**RESULT, "result": "first"}),
        '{not json but has "result"',
        json.dumps(RESULT),
    ]:
        reader.line(line)
    assert reader.result == RESULT


def test_usage_maps_claude_fields() -> None:
    assert usage_of(RESULT) == Usage(
        input_tokens=12,
        output_tokens=340,
        cache_write_tokens=2000,
        cache_read_tokens=15000,
        cost_usd=0.0123,
        api_calls=2,
    )


def test_malformed_usage_fields_count_as_unknown() -> None:
    broken = {"usage": {"input_tokens": "12", "output_tokens": -1}, "total_cost_usd": "free"}
    assert usage_of(broken) == Usage()
    assert usage_of({"usage": None, "total_cost_usd": float("nan")}) == Usage()


def test_the_answer_is_the_result_text() -> None:
    assert answer_of(RESULT) == "All tests pass."
    assert answer_of({"subtype": "error_max_turns"}) == ""
