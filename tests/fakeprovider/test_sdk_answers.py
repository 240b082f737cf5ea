"""Successful answers through the official SDKs: deterministic text, the same usage
streamed or not, tool calls that end once the tool result is in, model lists."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.fakeprovider import sdk
from tests.fakeprovider.sdk import API_MODES, PROMPT, call

from backstay.fakeprovider import FakeProvider, Reply, Scenario, ToolCall, count_tokens

EXPECTED_TEXT = f"Fake reply to: {PROMPT}"
WRITE = ToolCall(name="write_file", arguments={"path": "notes.txt", "content": "hello"})
TOOL_SCENARIO = Scenario(reply=Reply(tool_call=WRITE, text="The file is written."))
SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}}


@pytest.mark.parametrize(("api", "stream"), API_MODES)
def test_the_default_reply_is_derived_from_the_prompt(api: str, stream: bool) -> None:
    with FakeProvider() as fake:
        assert call(api, fake.url, stream=stream) == EXPECTED_TEXT


@pytest.mark.parametrize(("api", "stream"), API_MODES)
def test_a_scripted_reply_is_answered_whole(api: str, stream: bool) -> None:
    text = "One, two, three: a scripted reply with several words in it."
    with FakeProvider(Scenario(reply=Reply(text=text))) as fake:
        assert call(api, fake.url, stream=stream) == text


def _anthropic_usage(url: str, stream: bool) -> tuple[int, int]:
    with sdk.anthropic_client(url) as client:
        kw: dict[str, Any] = {
            "model": sdk.ANTHROPIC_MODEL,
            "max_tokens": 256,
            "messages": [{"role": "user", "content": PROMPT}],
        }
        if stream:
            with client.messages.stream(**kw) as events:
                usage = events.get_final_message().usage
        else:
            usage = client.messages.create(**kw).usage
    return usage.input_tokens, usage.output_tokens


def _chat_usage(url: str, stream: bool) -> tuple[int, int]:
    with sdk.openai_client(url) as client:
        messages = [{"role": "user", "content": PROMPT}]
        if stream:
            chunks = list(
                client.chat.completions.create(
                    model=sdk.OPENAI_MODEL,
                    messages=messages,
                    stream=True,
                    stream_options={"include_usage": True},
                )
            )
            usage = chunks[-1].usage
        else:
            usage = client.chat.completions.create(model=sdk.OPENAI_MODEL, messages=messages).usage
    assert usage is not None
    return usage.prompt_tokens, usage.completion_tokens


def _responses_usage(url: str, stream: bool) -> tuple[int, int]:
    with sdk.openai_client(url) as client:
        if stream:
            with client.responses.stream(model=sdk.OPENAI_MODEL, input=PROMPT) as events:
                usage = events.get_final_response().usage
        else:
            usage = client.responses.create(model=sdk.OPENAI_MODEL, input=PROMPT).usage
    assert usage is not None
    return usage.input_tokens, usage.output_tokens


def _gemini_usage(url: str, stream: bool) -> tuple[int, int]:
    with sdk.gemini_client(url) as client:
        if stream:
            parts = list(
                client.models.generate_content_stream(model=sdk.GEMINI_MODEL, contents=PROMPT)
            )
            usage = parts[-1].usage_metadata
        else:
            usage = client.models.generate_content(
                model=sdk.GEMINI_MODEL, contents=PROMPT
            ).usage_metadata
    assert usage is not None
    return usage.prompt_token_count or 0, usage.candidates_token_count or 0


USAGE = {
    "anthropic": _anthropic_usage,
    "openai-chat": _chat_usage,
    "openai-responses": _responses_usage,
    "gemini": _gemini_usage,
}


@pytest.mark.parametrize("api", list(USAGE))
def test_usage_is_the_documented_count_and_the_same_streamed_or_not(api: str) -> None:
    with FakeProvider() as fake:
        plain = USAGE[api](fake.url, False)
        streamed = USAGE[api](fake.url, True)
        stats = fake.stats()
    assert plain == streamed == (count_tokens(PROMPT), count_tokens(EXPECTED_TEXT))
    assert (stats.input_tokens, stats.output_tokens) == (2 * plain[0], 2 * plain[1])


def test_the_chat_stream_sends_usage_only_when_asked() -> None:
    with FakeProvider() as fake, sdk.openai_client(fake.url) as client:
        chunks = list(
            client.chat.completions.create(
                model=sdk.OPENAI_MODEL,
                messages=[{"role": "user", "content": PROMPT}],
                stream=True,
            )
        )
    assert all(chunk.usage is None for chunk in chunks)
    assert chunks[-1].choices[0].finish_reason == "stop"


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_tool_use_then_final_text_after_the_tool_result(stream: bool) -> None:
    tools = [{"name": "write_file", "description": "Write a file.", "input_schema": SCHEMA}]
    first_turn: list[dict[str, Any]] = [{"role": "user", "content": "Write notes.txt"}]
    with FakeProvider(TOOL_SCENARIO) as fake, sdk.anthropic_client(fake.url) as client:
        kw: dict[str, Any] = {"model": sdk.ANTHROPIC_MODEL, "max_tokens": 256, "tools": tools}
        if stream:
            with client.messages.stream(messages=first_turn, **kw) as events:
                first = events.get_final_message()
        else:
            first = client.messages.create(messages=first_turn, **kw)
        assert first.stop_reason == "tool_use"
        (use,) = first.content
        assert use.type == "tool_use"
        assert (use.name, use.input) == ("write_file", dict(WRITE.arguments))
        second = client.messages.create(
            messages=[
                *first_turn,
                {"role": "assistant", "content": [use.model_dump()]},
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "ok"}],
                },
            ],
            **kw,
        )
    assert second.stop_reason == "end_turn"
    assert [b.text for b in second.content if b.type == "text"] == ["The file is written."]


@pytest.mark.parametrize("stream", [False, True])
def test_chat_tool_calls_then_final_text_after_the_tool_message(stream: bool) -> None:
    tools = [{"type": "function", "function": {"name": "write_file", "parameters": SCHEMA}}]
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Write notes.txt"}]
    with FakeProvider(TOOL_SCENARIO) as fake, sdk.openai_client(fake.url) as client:
        if stream:
            chunks = list(
                client.chat.completions.create(
                    model=sdk.OPENAI_MODEL, messages=messages, tools=tools, stream=True
                )
            )
            calls = [c for ch in chunks if ch.choices for c in ch.choices[0].delta.tool_calls or []]
            name, arguments, call_id = (
                calls[0].function.name,
                calls[0].function.arguments,
                calls[0].id,
            )
            assert chunks[-1].choices[0].finish_reason == "tool_calls"
        else:
            done = client.chat.completions.create(
                model=sdk.OPENAI_MODEL, messages=messages, tools=tools
            )
            assert done.choices[0].finish_reason == "tool_calls"
            (tool_call,) = done.choices[0].message.tool_calls or []
            name, arguments, call_id = (
                tool_call.function.name,
                tool_call.function.arguments,
                tool_call.id,
            )
        assert (name, json.loads(arguments or "")) == ("write_file", dict(WRITE.arguments))
        final = client.chat.completions.create(
            model=sdk.OPENAI_MODEL,
            tools=tools,
            messages=[
                *messages,
                {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": name, "arguments": arguments},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": call_id, "content": "ok"},
            ],
        )
    assert final.choices[0].message.content == "The file is written."


@pytest.mark.parametrize("stream", [False, True])
def test_responses_function_call_then_final_text_after_its_output(stream: bool) -> None:
    tools = [{"type": "function", "name": "write_file", "parameters": SCHEMA, "strict": False}]
    with FakeProvider(TOOL_SCENARIO) as fake, sdk.openai_client(fake.url) as client:
        if stream:
            with client.responses.stream(
                model=sdk.OPENAI_MODEL, input="Write notes.txt", tools=tools
            ) as events:
                first = events.get_final_response()
        else:
            first = client.responses.create(
                model=sdk.OPENAI_MODEL, input="Write notes.txt", tools=tools
            )
        (item,) = first.output
        assert item.type == "function_call"
        assert (item.name, json.loads(item.arguments)) == ("write_file", dict(WRITE.arguments))
        final = client.responses.create(
            model=sdk.OPENAI_MODEL,
            tools=tools,
            input=[
                {"role": "user", "content": "Write notes.txt"},
                {"type": "function_call_output", "call_id": item.call_id, "output": "ok"},
            ],
        )
    assert final.output_text == "The file is written."


@pytest.mark.parametrize("stream", [False, True])
def test_gemini_function_call_then_final_text_after_the_function_response(stream: bool) -> None:
    from google.genai import types  # noqa: PLC0415

    declaration = types.FunctionDeclaration(name="write_file", description="Write a file.")
    config = types.GenerateContentConfig(tools=[types.Tool(function_declarations=[declaration])])
    with FakeProvider(TOOL_SCENARIO) as fake, sdk.gemini_client(fake.url) as client:
        if stream:
            (first,) = client.models.generate_content_stream(
                model=sdk.GEMINI_MODEL, contents="Write notes.txt", config=config
            )
        else:
            first = client.models.generate_content(
                model=sdk.GEMINI_MODEL, contents="Write notes.txt", config=config
            )
        (function_call,) = first.function_calls or []
        assert (function_call.name, function_call.args) == ("write_file", dict(WRITE.arguments))
        final = client.models.generate_content(
            model=sdk.GEMINI_MODEL,
            config=config,
            contents=[
                types.Content(role="user", parts=[types.Part(text="Write notes.txt")]),
                types.Content(role="model", parts=[types.Part(function_call=function_call)]),
                types.Content(
                    role="user",
                    parts=[
                        types.Part.from_function_response(
                            name="write_file", response={"result": "ok"}
                        )
                    ],
                ),
            ],
        )
    assert final.text == "The file is written."


def test_no_tool_call_when_the_request_offers_no_such_tool() -> None:
    with FakeProvider(TOOL_SCENARIO) as fake:
        assert call("anthropic", fake.url, stream=False) == "The file is written."


def test_the_text_is_cut_at_the_output_token_limit() -> None:
    with FakeProvider() as fake, sdk.anthropic_client(fake.url) as client:
        message = client.messages.create(
            model=sdk.ANTHROPIC_MODEL, max_tokens=3, messages=[{"role": "user", "content": PROMPT}]
        )
    assert message.stop_reason == "max_tokens"
    assert message.usage.output_tokens <= 3
    assert EXPECTED_TEXT.startswith(message.content[0].text)  # type: ignore[union-attr]


def test_each_sdk_lists_models() -> None:
    with FakeProvider() as fake:
        with sdk.anthropic_client(fake.url) as claude:
            anthropic_ids = [m.id for m in claude.models.list()]
        with sdk.openai_client(fake.url) as gpt:
            openai_ids = [m.id for m in gpt.models.list()]
        with sdk.gemini_client(fake.url) as gemini:
            gemini_names = [m.name for m in gemini.models.list()]
        assert fake.stats().by_api == {"anthropic": 1, "openai-chat": 1, "gemini": 1}
    assert sdk.ANTHROPIC_MODEL in anthropic_ids
    assert sdk.OPENAI_MODEL in openai_ids
    assert f"models/{sdk.GEMINI_MODEL}" in gemini_names


def test_token_counting_endpoints_use_the_same_count() -> None:
    with FakeProvider() as fake:
        with sdk.anthropic_client(fake.url) as claude:
            counted = claude.messages.count_tokens(
                model=sdk.ANTHROPIC_MODEL, messages=[{"role": "user", "content": PROMPT}]
            )
        with sdk.gemini_client(fake.url) as gemini:
            total = gemini.models.count_tokens(model=sdk.GEMINI_MODEL, contents=PROMPT)
    assert counted.input_tokens == total.total_tokens == count_tokens(PROMPT)
