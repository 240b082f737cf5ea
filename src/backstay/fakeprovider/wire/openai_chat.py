"""The OpenAI Chat Completions wire format: ``chat.completion`` JSON and the stream of
``chat.completion.chunk`` ``data:`` lines ending with ``data: [DONE]`` (a last chunk with
empty ``choices`` and the usage when ``stream_options.include_usage`` is set)."""

from __future__ import annotations

import time
from typing import Any, Final

from backstay.fakeprovider._answer import Answer
from backstay.fakeprovider._prompt import Prompt
from backstay.fakeprovider.wire.base import SSE_TYPE, Reply, dumps
from backstay.fakeprovider.wire.openai_errors import REQUEST_ID_HEADER, stream_error_body

_DONE: Final = b"data: [DONE]\n\n"


def _data(chunk: dict[str, Any]) -> bytes:
    return b"data: " + dumps(chunk) + b"\n\n"


def _usage(answer: Answer) -> dict[str, Any]:
    return {
        "prompt_tokens": answer.input_tokens,
        "completion_tokens": answer.output_tokens,
        "total_tokens": answer.input_tokens + answer.output_tokens,
        "prompt_tokens_details": {"cached_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }


def _finish(answer: Answer) -> str:
    if answer.is_tool_call:
        return "tool_calls"
    return "length" if answer.truncated else "stop"


def _tool_call(answer: Answer, *, index: int | None = None) -> dict[str, Any]:
    call: dict[str, Any] = {
        "id": f"call_{answer.call_id}",
        "type": "function",
        "function": {"name": answer.tool_name, "arguments": answer.tool_arguments},
    }
    return call if index is None else {"index": index, **call}


def completion(answer: Answer, prompt: Prompt, request_id: str) -> Reply:
    message: dict[str, Any] = {"role": "assistant", "content": answer.text, "refusal": None}
    if answer.is_tool_call:
        message["content"] = None
        message["tool_calls"] = [_tool_call(answer)]
    body = {
        "id": f"chatcmpl-{answer.call_id}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": prompt.model,
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": _finish(answer)}
        ],
        "usage": _usage(answer),
        "system_fingerprint": "fp_backstay",
    }
    return Reply(status=200, headers={REQUEST_ID_HEADER: request_id}, body=dumps(body))


def stream(answer: Answer, prompt: Prompt, request_id: str) -> Reply:
    base = {
        "id": f"chatcmpl-{answer.call_id}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": prompt.model,
        "system_fingerprint": "fp_backstay",
    }
    usage_field = {"usage": None} if prompt.include_usage else {}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return _data({**base, "choices": [choice], **usage_field})

    events = [chunk({"role": "assistant", "content": "" if not answer.is_tool_call else None})]
    if answer.is_tool_call:
        events.append(chunk({"tool_calls": [_tool_call(answer, index=0)]}))
    else:
        events.extend(chunk({"content": piece}) for piece in answer.pieces)
    events.append(chunk({}, _finish(answer)))
    if prompt.include_usage:
        events.append(_data({**base, "choices": [], "usage": _usage(answer)}))
    events.append(_DONE)
    return Reply(
        status=200,
        headers={REQUEST_ID_HEADER: request_id},
        events=tuple(events),
        content_type=SSE_TYPE,
    )


def stream_error() -> bytes:
    return _data({"error": stream_error_body()})
