"""The four APIs behind one interface, so the server's request path is written once."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from backstay.fakeprovider import _prompt
from backstay.fakeprovider._answer import Answer
from backstay.fakeprovider._prompt import Prompt
from backstay.fakeprovider.faults import FaultKind
from backstay.fakeprovider.wire import anthropic as _anthropic
from backstay.fakeprovider.wire import gemini as _gemini
from backstay.fakeprovider.wire import openai_chat as _openai_chat
from backstay.fakeprovider.wire import openai_errors as _openai_errors
from backstay.fakeprovider.wire import openai_responses as _responses
from backstay.fakeprovider.wire.base import ErrorContext, Reply


@dataclasses.dataclass(frozen=True, slots=True)
class Api:
    """``parse`` reads a body (with the model and stream flag the URL gives, for Gemini);
    ``answer`` renders JSON or a stream as the prompt asks; ``blocked`` is the 200 answer
    a content-policy fault takes where the API has one (else ``None``: an error)."""

    name: str
    parse: Callable[[Mapping[str, Any], str, bool], Prompt]
    error: Callable[[FaultKind, ErrorContext], Reply]
    bad_request: Callable[[str, str], Reply]
    answer: Callable[[Answer, Prompt, str], Reply]
    stream_error: Callable[[int], bytes]
    blocked: Callable[[Answer, Prompt], Reply] | None = None
    request_id_header: str | None = None


def _anthropic_answer(answer: Answer, prompt: Prompt, request_id: str) -> Reply:
    render = _anthropic.stream if prompt.stream else _anthropic.message
    return render(answer, prompt.model, request_id)


def _chat_answer(answer: Answer, prompt: Prompt, request_id: str) -> Reply:
    render = _openai_chat.stream if prompt.stream else _openai_chat.completion
    return render(answer, prompt, request_id)


def _responses_answer(answer: Answer, prompt: Prompt, request_id: str) -> Reply:
    render = _responses.stream if prompt.stream else _responses.response
    return render(answer, prompt, request_id)


def _gemini_answer(answer: Answer, prompt: Prompt, _request_id: str) -> Reply:
    if prompt.stream:
        return _gemini.stream(answer, prompt.model)
    return _gemini.content(answer, prompt.model)


def _gemini_blocked(answer: Answer, prompt: Prompt) -> Reply:
    if prompt.stream:
        return _gemini.stream(answer, prompt.model, blocked=True)
    return _gemini.content(answer, prompt.model, blocked=True)


ANTHROPIC = Api(
    name=_prompt.ANTHROPIC,
    parse=lambda body, _model, _stream: _prompt.anthropic(body),
    error=_anthropic.error,
    bad_request=_anthropic.bad_request,
    answer=_anthropic_answer,
    stream_error=lambda _n: _anthropic.stream_error("req_stream"),
    request_id_header=_anthropic.REQUEST_ID_HEADER,
)

OPENAI_CHAT = Api(
    name=_prompt.OPENAI_CHAT,
    parse=lambda body, _model, _stream: _prompt.openai_chat(body),
    error=_openai_errors.error,
    bad_request=_openai_errors.bad_request,
    answer=_chat_answer,
    stream_error=lambda _n: _openai_chat.stream_error(),
    request_id_header=_openai_errors.REQUEST_ID_HEADER,
)

OPENAI_RESPONSES = Api(
    name=_prompt.OPENAI_RESPONSES,
    parse=lambda body, _model, _stream: _prompt.openai_responses(body),
    error=lambda kind, ctx: _openai_errors.error(kind, ctx, responses=True),
    bad_request=_openai_errors.bad_request,
    answer=_responses_answer,
    stream_error=_responses.stream_error,
    request_id_header=_openai_errors.REQUEST_ID_HEADER,
)

GEMINI = Api(
    name=_prompt.GEMINI,
    parse=lambda body, model, stream: _prompt.gemini(body, model=model, stream=stream),
    error=_gemini.error,
    bad_request=lambda message, _rid: _gemini.bad_request(message),
    answer=_gemini_answer,
    stream_error=lambda _n: _gemini.stream_error(),
    blocked=_gemini_blocked,
)
