"""Calls through the official SDKs, one per API and mode, used by the fake-provider tests.

Each client is built with its retries off and a short timeout so that every test is
bounded; each call reads the whole answer (a stream to its end) and returns its text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import anthropic
import httpx
import httpx2
import openai
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

# A key shaped like a real one: tests check it never leaks into logs or stats.
CANARY_KEY: Final = "sk-ant-api03-CANARYfakeprovider0123456789abcdefABCDEF"
ANTHROPIC_MODEL: Final = "claude-sonnet-4-6"
OPENAI_MODEL: Final = "gpt-5"
GEMINI_MODEL: Final = "gemini-2.5-flash"
PROMPT: Final = "Write a haiku about resilient systems, please."
TIMEOUT_S: Final = 10.0

# What a failed call raises: an SDK's own error, or a transport error a stream lets through.
SDK_ERRORS: Final = (
    anthropic.APIError,
    openai.APIError,
    genai_errors.APIError,
    httpx.HTTPError,
    httpx2.HTTPError,
)
API_MODES: Final = (
    ("anthropic", False),
    ("anthropic", True),
    ("openai-chat", False),
    ("openai-chat", True),
    ("openai-responses", False),
    ("openai-responses", True),
    ("gemini", False),
    ("gemini", True),
)
PROVIDER: Final = {
    "anthropic": "anthropic",
    "openai-chat": "openai",
    "openai-responses": "openai",
    "gemini": "gemini",
}


def anthropic_client(url: str, timeout_s: float = TIMEOUT_S, **options: Any) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=url, api_key=CANARY_KEY, max_retries=0, timeout=timeout_s, **options
    )


def openai_client(url: str, timeout_s: float = TIMEOUT_S, **options: Any) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=url + "/v1", api_key=CANARY_KEY, max_retries=0, timeout=timeout_s, **options
    )


def gemini_client(url: str, timeout_s: float = TIMEOUT_S) -> genai.Client:
    return genai.Client(
        api_key=CANARY_KEY,
        http_options=types.HttpOptions(base_url=url, timeout=int(timeout_s * 1000)),
    )


def _anthropic(url: str, stream: bool, timeout_s: float, **kw: Any) -> str:
    client = anthropic_client(url, timeout_s)
    messages = [{"role": "user", "content": PROMPT}]
    with client:
        if not stream:
            message = client.messages.create(
                model=ANTHROPIC_MODEL, max_tokens=256, messages=messages, **kw
            )
        else:
            with client.messages.stream(
                model=ANTHROPIC_MODEL, max_tokens=256, messages=messages, **kw
            ) as events:
                message = events.get_final_message()
    return "".join(b.text for b in message.content if b.type == "text")


def _chat(url: str, stream: bool, timeout_s: float, **kw: Any) -> str:
    client = openai_client(url, timeout_s)
    messages = [{"role": "user", "content": PROMPT}]
    with client:
        if not stream:
            done = client.chat.completions.create(model=OPENAI_MODEL, messages=messages, **kw)
            return done.choices[0].message.content or ""
        chunks = client.chat.completions.create(
            model=OPENAI_MODEL, messages=messages, stream=True, **kw
        )
        return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)


def _responses(url: str, stream: bool, timeout_s: float, **kw: Any) -> str:
    client = openai_client(url, timeout_s)
    with client:
        if not stream:
            return client.responses.create(model=OPENAI_MODEL, input=PROMPT, **kw).output_text
        with client.responses.stream(model=OPENAI_MODEL, input=PROMPT, **kw) as events:
            return events.get_final_response().output_text


def _gemini(url: str, stream: bool, timeout_s: float, **kw: Any) -> str:
    client = gemini_client(url, timeout_s)
    with client:
        if not stream:
            return (
                client.models.generate_content(model=GEMINI_MODEL, contents=PROMPT, **kw).text or ""
            )
        parts = client.models.generate_content_stream(model=GEMINI_MODEL, contents=PROMPT, **kw)
        return "".join(p.text or "" for p in parts)


CALLS: Final[dict[str, Callable[..., str]]] = {
    "anthropic": _anthropic,
    "openai-chat": _chat,
    "openai-responses": _responses,
    "gemini": _gemini,
}


def call(api: str, url: str, *, stream: bool, timeout_s: float = TIMEOUT_S, **kw: Any) -> str:
    """One request through the SDK of ``api``; the answer's text."""
    return CALLS[api](url, stream, timeout_s, **kw)
