"""The OpenAI Responses wire format: a ``response`` object, and its SSE stream.

Stream (each event with ``type`` and ``sequence_number``): ``response.created``,
``response.in_progress``, then for a message ``response.output_item.added``,
``response.content_part.added``, ``response.output_text.delta`` …,
``response.output_text.done``, ``response.content_part.done``,
``response.output_item.done``; for a function call ``response.output_item.added``,
``response.function_call_arguments.delta``, ``response.function_call_arguments.done``,
``response.output_item.done``; last ``response.completed`` with the usage.
"""

from __future__ import annotations

import time
from typing import Any

from backstay.fakeprovider._answer import Answer
from backstay.fakeprovider._prompt import Prompt
from backstay.fakeprovider.wire.base import SSE_TYPE, Reply, dumps, sse
from backstay.fakeprovider.wire.openai_errors import REQUEST_ID_HEADER, stream_error_body


def _usage(answer: Answer) -> dict[str, Any]:
    return {
        "input_tokens": answer.input_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": answer.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": answer.input_tokens + answer.output_tokens,
    }


def _item(answer: Answer, *, done: bool) -> dict[str, Any]:
    status = "completed" if done else "in_progress"
    if answer.is_tool_call:
        return {
            "type": "function_call",
            "id": f"fc_{answer.call_id}",
            "call_id": f"call_{answer.call_id}",
            "name": answer.tool_name,
            "arguments": answer.tool_arguments if done else "",
            "status": status,
        }
    return {
        "type": "message",
        "id": f"msg_{answer.call_id}",
        "status": status,
        "role": "assistant",
        "content": [_part(answer.text)] if done else [],
    }


def _part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def _response(answer: Answer, prompt: Prompt, *, done: bool) -> dict[str, Any]:
    status = "completed" if done else "in_progress"
    incomplete = None
    if done and answer.truncated:
        status, incomplete = "incomplete", {"reason": "max_output_tokens"}
    return {
        "id": f"resp_{answer.call_id}",
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "error": None,
        "incomplete_details": incomplete,
        "instructions": None,
        "max_output_tokens": prompt.max_tokens,
        "model": prompt.model,
        "output": [_item(answer, done=True)] if done else [],
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": False,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": _usage(answer) if done else None,
        "metadata": {},
    }


def response(answer: Answer, prompt: Prompt, request_id: str) -> Reply:
    body = _response(answer, prompt, done=True)
    return Reply(status=200, headers={REQUEST_ID_HEADER: request_id}, body=dumps(body))


def _events(answer: Answer, prompt: Prompt) -> list[dict[str, Any]]:
    started = _response(answer, prompt, done=False)
    out: list[dict[str, Any]] = [
        {"type": "response.created", "response": started},
        {"type": "response.in_progress", "response": started},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": _item(answer, done=False),
        },
    ]
    item_id = _item(answer, done=False)["id"]
    if answer.is_tool_call:
        out += [
            {
                "type": "response.function_call_arguments.delta",
                "item_id": item_id,
                "output_index": 0,
                "delta": answer.tool_arguments,
            },
            {
                "type": "response.function_call_arguments.done",
                "item_id": item_id,
                "output_index": 0,
                "arguments": answer.tool_arguments,
            },
        ]
    else:
        where = {"item_id": item_id, "output_index": 0, "content_index": 0}
        out.append({"type": "response.content_part.added", **where, "part": _part("")})
        out += [
            {"type": "response.output_text.delta", **where, "delta": piece, "logprobs": []}
            for piece in answer.pieces
        ]
        out += [
            {"type": "response.output_text.done", **where, "text": answer.text, "logprobs": []},
            {"type": "response.content_part.done", **where, "part": _part(answer.text)},
        ]
    out.append(
        {"type": "response.output_item.done", "output_index": 0, "item": _item(answer, done=True)}
    )
    final = "response.incomplete" if answer.truncated else "response.completed"
    out.append({"type": final, "response": _response(answer, prompt, done=True)})
    return out


def stream(answer: Answer, prompt: Prompt, request_id: str) -> Reply:
    events = tuple(
        sse({**event, "sequence_number": number}, event["type"])
        for number, event in enumerate(_events(answer, prompt))
    )
    return Reply(
        status=200,
        headers={REQUEST_ID_HEADER: request_id},
        events=events,
        content_type=SSE_TYPE,
    )


def stream_error(sequence_number: int) -> bytes:
    return sse(
        {"type": "error", "sequence_number": sequence_number, "error": stream_error_body()},
        "error",
    )
