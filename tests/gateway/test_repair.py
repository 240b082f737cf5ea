"""The gateway's repair of a Gemini conversation that answers a tool call twice
(``backstay.gateway.repair``): only the repeated ``functionResponse`` part is dropped, only
where the responses outnumber the calls before them; any other body passes as it came,
byte for byte. Through the real gateway, the fake provider (which refuses the defect as
Gemini does) answers the repaired request, and the Gemini SDK gets its answer."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Final

import pytest
from google.genai import errors
from tests.gateway.helpers import CANARY_KEY, GEMINI_MODEL, gemini_client, served

from backstay.gateway.repair import (
    DUPLICATE_FUNCTION_RESPONSE,
    dedupe_function_responses,
    repaired,
)
from backstay.gateway.routes import NOT_JSON, Route, body_json
from backstay.gateway.runs import RunTicket
from backstay.testing import capture_events

STREAM: Final = Route(
    provider="gemini",
    model=GEMINI_MODEL,
    endpoint=f"/v1beta/models/{GEMINI_MODEL}:streamGenerateContent",
)
GENERATE: Final = Route(
    provider="gemini", model=GEMINI_MODEL, endpoint=f"/v1beta/models/{GEMINI_MODEL}:generateContent"
)
COUNT: Final = Route(
    provider="gemini", model=GEMINI_MODEL, endpoint=f"/v1beta/models/{GEMINI_MODEL}:countTokens"
)
CALL: Final = {
    "functionCall": {
        "id": "run_shell_command_1_0",
        "name": "run_shell_command",
        "args": {"command": "echo step-1 >> progress.txt"},
    }
}
RESULT: Final = {
    "functionResponse": {
        "id": "run_shell_command_1_0",
        "name": "run_shell_command",
        "response": {"output": "Output: (empty)\nProcess Group PGID: 6464 — ü"},
    }
}


def _conversation(*answer: dict[str, Any], after: bool = True) -> dict[str, Any]:
    """Gemini CLI's resumed conversation: the prompt, the model's call, the user content
    ``answer`` (its results), then the interrupted answer and ``continue``."""
    contents: list[dict[str, Any]] = [
        {"role": "user", "parts": [{"text": "Run the three steps."}]},
        {"role": "model", "parts": [CALL]},
        {"role": "user", "parts": list(answer)},
    ]
    if after:
        contents += [
            {"role": "model", "parts": [{"text": "[The previous response was interrupted.]"}]},
            {"role": "user", "parts": [{"text": "continue"}]},
        ]
    return {
        "contents": contents,
        "tools": [{"functionDeclarations": [{"name": "run_shell_command"}]}],
        "generationConfig": {"temperature": 0.5, "topP": 1.0e-7},
    }


def _encoded(data: object) -> bytes:
    return json.dumps(data, indent=1).encode()


def test_a_result_given_twice_is_given_once_and_nothing_else_changes() -> None:
    data = _conversation(RESULT, copy.deepcopy(RESULT))
    body = _encoded(data)
    with capture_events() as events:
        fixed_body, fixed = repaired(STREAM, body, body_json(body))
    expected = _conversation(RESULT)
    assert fixed == expected
    assert json.loads(fixed_body) == expected
    [event] = events.named("request.repaired")
    assert event.to_dict() == {
        "event": "request.repaired",
        "operation": f"gateway:gemini/{GEMINI_MODEL}",
        "policy": None,
        "provider": "gemini",
        "model": GEMINI_MODEL,
        "endpoint": STREAM.endpoint,
        "reason": DUPLICATE_FUNCTION_RESPONSE,
        "dropped": 1,
        "task": None,
        "attempt": None,
    }


def test_the_repair_of_a_run_request_is_told_under_its_task() -> None:
    body = _encoded(_conversation(RESULT, RESULT))
    ticket = RunTicket(provider="gemini", key=CANARY_KEY, task="run:t1", attempt="run:t1:2")
    with capture_events() as events:
        repaired(GENERATE, body, body_json(body), ticket)
    [event] = events.named("request.repaired")
    assert (event.operation, event.task, event.attempt) == ("run:t1", "run:t1", "run:t1:2")  # type: ignore[attr-defined]
    assert CANARY_KEY not in json.dumps(event.to_dict())


def test_a_result_given_three_times_is_given_once() -> None:
    data, dropped = dedupe_function_responses(_conversation(RESULT, RESULT, RESULT, after=False))
    assert (data, dropped) == (_conversation(RESULT, after=False), 2)


def test_only_as_many_repeats_are_dropped_as_the_responses_outnumber_the_calls() -> None:
    # Two calls (the same twice) before: two identical results answer them, the third goes.
    data = _conversation(RESULT, RESULT, RESULT)
    data["contents"][1]["parts"] = [CALL, CALL]
    fixed, dropped = dedupe_function_responses(data)
    assert dropped == 1
    assert fixed["contents"][2]["parts"] == [RESULT, RESULT]  # type: ignore[index]
    assert fixed["contents"][1] == data["contents"][1]  # type: ignore[index]


def _other_result() -> dict[str, Any]:
    other = copy.deepcopy(RESULT)
    other["functionResponse"]["response"] = {"output": "something else"}
    return other


def _unnamed_result() -> dict[str, Any]:
    other = copy.deepcopy(RESULT)
    del other["functionResponse"]["id"]
    return other


def _balanced() -> dict[str, Any]:
    return _conversation(RESULT)


def _differing_results() -> dict[str, Any]:
    return _conversation(RESULT, _other_result())


def _results_differing_in_id() -> dict[str, Any]:
    return _conversation(RESULT, _unnamed_result())


def _repeat_in_another_content() -> dict[str, Any]:
    # The same result again, answering the same call again: each content balanced.
    data = _conversation(RESULT, after=False)
    data["contents"] += [{"role": "model", "parts": [CALL]}, {"role": "user", "parts": [RESULT]}]
    return data


def _results_mentioned_in_text() -> dict[str, Any]:
    data = _conversation(RESULT)
    data["contents"][0]["parts"] = [{"text": "functionResponse"}, {"text": "functionResponse"}]
    return data


UNCHANGED: Final = [
    _balanced,
    _differing_results,
    _results_differing_in_id,
    _repeat_in_another_content,
    _results_mentioned_in_text,
]


@pytest.mark.parametrize("make", UNCHANGED, ids=lambda f: f.__name__.strip("_"))
def test_a_body_without_the_defect_passes_byte_for_byte(make: Any) -> None:
    body = _encoded(make())
    parsed = body_json(body)
    with capture_events() as events:
        out_body, out_parsed = repaired(STREAM, body, parsed)
    assert out_body is body
    assert out_parsed is parsed
    assert not events.named("request.repaired")


@pytest.mark.parametrize(
    ("found", "body"),
    [
        (COUNT, _encoded(_conversation(RESULT, RESULT))),  # not a conversation answered
        (
            Route(provider="openai", model="gpt-5", endpoint="/v1/chat/completions"),
            _encoded(_conversation(RESULT, RESULT)),
        ),
        (STREAM, b'{"contents": "functionResponse" "functionResponse"'),  # not JSON
        (STREAM, b'["functionResponse", "functionResponse"]'),  # JSON, no contents
        (STREAM, b""),
    ],
)
def test_other_requests_pass_byte_for_byte(found: Route, body: bytes) -> None:
    parsed = body_json(body) if body else NOT_JSON
    out_body, out_parsed = repaired(found, body, parsed)
    assert out_body is body
    assert out_parsed is parsed


def test_a_lone_surrogate_the_client_escaped_stays_escaped() -> None:
    data = _conversation(RESULT, RESULT)
    data["contents"][0]["parts"][0]["text"] = "half \ud800 a pair"
    body = json.dumps(data).encode()
    out_body, out_parsed = repaired(STREAM, body, body_json(body))
    expected = _conversation(RESULT)
    expected["contents"][0] = data["contents"][0]
    assert json.loads(out_body) == out_parsed == expected
    assert b"\\ud800" in out_body


def _send(url: str, contents: list[dict[str, Any]]) -> str:
    with gemini_client(url) as client:
        answer = client.models.generate_content(model=GEMINI_MODEL, contents=contents)  # type: ignore[arg-type]
        return answer.text or ""


def test_the_gateway_forwards_the_repaired_conversation_which_the_provider_answers(
    tmp_path: Path,
) -> None:
    contents = _conversation(RESULT, RESULT)["contents"]
    with served(tmp_path) as s, capture_events() as events:
        # Straight to the provider, the conversation is refused as Gemini refuses it.
        with pytest.raises(errors.ClientError) as refused:
            _send(s.fake.url, contents)
        assert refused.value.code == 400
        assert "number of function response parts" in str(refused.value)
        # Through the gateway, the repeated result is dropped and the answer comes.
        assert _send(s.url, contents)
        stats = s.fake.stats()
    assert stats.requests == 2
    assert dict(stats.by_status) == {400: 1, 200: 1}
    [event] = events.named("request.repaired")
    assert event.dropped == 1  # type: ignore[attr-defined]
    assert CANARY_KEY not in json.dumps([e.to_dict() for e in events], default=str)
