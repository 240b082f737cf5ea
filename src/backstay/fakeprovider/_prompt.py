"""A request body of any of the four APIs → one neutral ``Prompt``: what the answer and
the token counts depend on. Bodies that are not the API's shape raise ``BadRequest``."""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Iterator, Mapping
from typing import Any, Final

from backstay.fakeprovider.tokens import count_tokens

ANTHROPIC: Final = "anthropic"
OPENAI_CHAT: Final = "openai-chat"
OPENAI_RESPONSES: Final = "openai-responses"
GEMINI: Final = "gemini"


class BadRequest(Exception):
    """The body is not a request of the API: answered with the API's own 400."""


@dataclasses.dataclass(frozen=True, slots=True)
class Prompt:
    api: str
    model: str
    stream: bool
    input_tokens: int
    user_text: str
    tools: frozenset[str]
    tool_results: int
    include_usage: bool = False
    max_tokens: int | None = None

    @property
    def has_tool_result(self) -> bool:
        return self.tool_results > 0


def json_object(raw: bytes) -> Mapping[str, Any]:
    """The request body as a JSON object (``ValueError`` / ``BadRequest`` otherwise)."""
    body = json.loads(raw)
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object")
    return body


# Keys whose values are structure, not text: never counted as tokens.
_STRUCTURE: Final = frozenset(
    {"role", "type", "id", "call_id", "tool_use_id", "tool_call_id", "cache_control", "status"}
)


def _strings(value: object) -> Iterator[str]:
    """Every text inside ``value``: string values, except those of ``_STRUCTURE`` keys."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if key not in _STRUCTURE:
                yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _tokens(*values: object) -> int:
    return sum(count_tokens(s) for v in values for s in _strings(v))


def _text_of(content: object, *, text_types: frozenset[str]) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, Mapping) and part.get("type") in text_types
        )
    return ""


def _last(items: list[Any], role: str) -> Mapping[str, Any] | None:
    for item in reversed(items):
        if isinstance(item, Mapping) and item.get("role") == role:
            return item
    return None


def _require(body: Mapping[str, Any], key: str, kind: type, what: str) -> Any:
    value = body.get(key)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise BadRequest(f"{key}: {what}")
    return value


def _model(body: Mapping[str, Any]) -> str:
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise BadRequest("model: Field required")
    return model


def _names(tools: object, *, nested: str | None = None) -> frozenset[str]:
    names: set[str] = set()
    for tool in tools if isinstance(tools, list) else []:
        if not isinstance(tool, Mapping):
            continue
        inner = tool.get(nested) if nested else tool
        if isinstance(inner, Mapping) and isinstance(inner.get("name"), str):
            names.add(inner["name"])
    return frozenset(names)


def anthropic(body: Mapping[str, Any]) -> Prompt:
    messages = _require(body, "messages", list, "Field required")
    max_tokens = _require(body, "max_tokens", int, "Field required")
    if max_tokens < 1:
        raise BadRequest("max_tokens: must be at least 1")
    user = _last(messages, "user")
    blocks = [
        block
        for m in messages
        if isinstance(m, Mapping) and isinstance(m.get("content"), list)
        for block in m["content"]
    ]
    return Prompt(
        api=ANTHROPIC,
        model=_model(body),
        stream=body.get("stream") is True,
        input_tokens=_tokens(body.get("system"), messages, body.get("tools")),
        user_text=_text_of(user.get("content") if user else "", text_types=frozenset({"text"})),
        tools=_names(body.get("tools")),
        tool_results=sum(
            1 for b in blocks if isinstance(b, Mapping) and b.get("type") == "tool_result"
        ),
        max_tokens=max_tokens,
    )


def openai_chat(body: Mapping[str, Any]) -> Prompt:
    messages = _require(body, "messages", list, "Field required")
    user = _last(messages, "user")
    options = body.get("stream_options")
    limit = body.get("max_completion_tokens", body.get("max_tokens"))
    return Prompt(
        api=OPENAI_CHAT,
        model=_model(body),
        stream=body.get("stream") is True,
        input_tokens=_tokens(messages, body.get("tools")),
        user_text=_text_of(user.get("content") if user else "", text_types=frozenset({"text"})),
        tools=_names(body.get("tools"), nested="function"),
        tool_results=sum(1 for m in messages if isinstance(m, Mapping) and m.get("role") == "tool"),
        include_usage=isinstance(options, Mapping) and options.get("include_usage") is True,
        max_tokens=limit if isinstance(limit, int) and limit > 0 else None,
    )


_RESULT_ITEMS: Final = frozenset({"function_call_output", "custom_tool_call_output"})


def openai_responses(body: Mapping[str, Any]) -> Prompt:
    raw = body.get("input")
    if not isinstance(raw, str | list):
        raise BadRequest("input: Field required")
    items = [{"role": "user", "content": raw}] if isinstance(raw, str) else raw
    user = _last(items, "user")
    limit = body.get("max_output_tokens")
    return Prompt(
        api=OPENAI_RESPONSES,
        model=_model(body),
        stream=body.get("stream") is True,
        input_tokens=_tokens(body.get("instructions"), items, body.get("tools")),
        user_text=_text_of(
            user.get("content") if user else "", text_types=frozenset({"input_text", "text"})
        ),
        tools=_names(body.get("tools")),
        tool_results=sum(
            1 for i in items if isinstance(i, Mapping) and i.get("type") in _RESULT_ITEMS
        ),
        max_tokens=limit if isinstance(limit, int) and limit > 0 else None,
    )


# Gemini's answer to a function-response turn that does not answer each call of the turn
# before it exactly once (a CLI resuming a session has sent a result twice).
UNPAIRED_RESPONSES: Final = (
    "Please ensure that the number of function response parts is equal to the number of "
    "function call parts of the function call turn."
)


def _counted(content: object, kind: str) -> int:
    parts = content.get("parts") if isinstance(content, Mapping) else None
    if not isinstance(parts, list):
        return 0
    return sum(1 for p in parts if isinstance(p, Mapping) and kind in p)


def _check_pairs(contents: list[Any]) -> None:
    """Each content holding function responses answers the calls of the one before it,
    one part for each, as Gemini requires."""
    for before, content in itertools.pairwise(contents):
        answers = _counted(content, "functionResponse")
        if answers and answers != _counted(before, "functionCall"):
            raise BadRequest(UNPAIRED_RESPONSES)


def gemini(body: Mapping[str, Any], *, model: str, stream: bool) -> Prompt:
    contents = _require(body, "contents", list, "contents is required")
    _check_pairs(contents)
    user = _last(contents, "user") or next(
        (c for c in reversed(contents) if isinstance(c, Mapping) and "role" not in c), None
    )
    parts = [
        part
        for c in contents
        if isinstance(c, Mapping) and isinstance(c.get("parts"), list)
        for part in c["parts"]
    ]
    user_parts = user.get("parts") if user else None
    declared = [
        d
        for tool in body.get("tools") or []
        if isinstance(tool, Mapping)
        for d in tool.get("functionDeclarations") or []
    ]
    config = body.get("generationConfig")
    limit = config.get("maxOutputTokens") if isinstance(config, Mapping) else None
    return Prompt(
        api=GEMINI,
        model=model,
        stream=stream,
        input_tokens=_tokens(body.get("systemInstruction"), contents, body.get("tools")),
        user_text=" ".join(
            str(p.get("text", ""))
            for p in (user_parts if isinstance(user_parts, list) else [])
            if isinstance(p, Mapping) and "text" in p
        ),
        tools=_names(declared),
        tool_results=sum(1 for p in parts if isinstance(p, Mapping) and "functionResponse" in p),
        max_tokens=limit if isinstance(limit, int) and limit > 0 else None,
    )
