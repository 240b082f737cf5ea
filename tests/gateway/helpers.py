"""Shared by the gateway tests: a fake provider behind a gateway, with tiny retry delays,
and the official SDK clients pointed at the gateway with their own retries off."""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import anthropic
import httpx
import openai
from google import genai
from google.genai import types

from backstay.fakeprovider import FakeProvider, Fault, Scenario
from backstay.gateway import GATEWAY_POLICY, Gateway, GatewaySettings, Upstreams

# A key shaped like a real one: tests check it never leaks into output or events.
CANARY_KEY: Final = "sk-ant-api03-CANARYgateway0123456789abcdefABCDEFghij"
ANTHROPIC_MODEL: Final = "claude-sonnet-4-6"
OPENAI_MODEL: Final = "gpt-5"
GEMINI_MODEL: Final = "gemini-2.5-flash"
TIMEOUT_S: Final = 20.0
# Tiny, seeded delays: the tests wait for no real backoff (Retry-After hints excepted).
FAST_POLICY: Final = GATEWAY_POLICY.derive(
    initial_delay_s=0.001, max_delay_s=0.005, seed=7, deadline_s=60.0
)


@dataclasses.dataclass
class Served:
    fake: FakeProvider
    gateway: Gateway
    log: Path

    @property
    def url(self) -> str:
        return self.gateway.url

    def logged(self) -> list[dict[str, Any]]:
        """The fake provider's request log (flushed: read after the fake stops)."""
        lines = self.log.read_text().splitlines() if self.log.exists() else []
        return [json.loads(line) for line in lines]


@contextlib.contextmanager
def served(tmp_path: Path, *faults: Fault, **settings: Any) -> Iterator[Served]:
    """A fake provider with ``faults`` behind a gateway with ``settings``; both stopped at
    the end (the fake's log is complete once the block has ended)."""
    log = tmp_path / "requests.jsonl"
    with FakeProvider(Scenario(faults=faults), log_path=log) as fake:
        options: dict[str, Any] = {"port": 0, "policy": FAST_POLICY, **settings}
        options.setdefault("upstreams", Upstreams.all(fake.url))
        with Gateway(GatewaySettings(**options)) as gateway:
            yield Served(fake=fake, gateway=gateway, log=log)


def anthropic_client(url: str, **options: Any) -> anthropic.Anthropic:
    options.setdefault("timeout", TIMEOUT_S)
    return anthropic.Anthropic(base_url=url, api_key=CANARY_KEY, max_retries=0, **options)


def openai_client(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=url + "/v1", api_key=CANARY_KEY, max_retries=0, timeout=TIMEOUT_S)


def gemini_client(url: str) -> genai.Client:
    return genai.Client(
        api_key=CANARY_KEY,
        http_options=types.HttpOptions(base_url=url, timeout=int(TIMEOUT_S * 1000)),
    )


MESSAGES: Final = [{"role": "user", "content": "Write a haiku about resilient systems."}]


def claude_stream_bytes(url: str) -> httpx.Response:
    """A streamed Messages request sent as plain HTTP: the answer's bytes as they came."""
    return httpx.post(
        url + "/v1/messages",
        json={"model": ANTHROPIC_MODEL, "max_tokens": 50, "messages": MESSAGES, "stream": True},
        headers={"x-api-key": "test-key-123456", "anthropic-version": "2023-06-01"},
        timeout=20,
    )


def claude(url: str, *, stream: bool = False) -> str:
    with anthropic_client(url) as client:
        if stream:
            with client.messages.stream(
                model=ANTHROPIC_MODEL, max_tokens=200, messages=MESSAGES
            ) as events:
                message = events.get_final_message()
        else:
            message = client.messages.create(
                model=ANTHROPIC_MODEL, max_tokens=200, messages=MESSAGES
            )
    return "".join(b.text for b in message.content if b.type == "text")


def chat(url: str, *, stream: bool = False) -> str:
    with openai_client(url) as client:
        if not stream:
            done = client.chat.completions.create(model=OPENAI_MODEL, messages=MESSAGES)  # type: ignore[arg-type]
            return done.choices[0].message.content or ""
        chunks = client.chat.completions.create(
            model=OPENAI_MODEL,
            messages=MESSAGES,  # type: ignore[arg-type]
            stream=True,
        )
        return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)


def responses(url: str, *, stream: bool = False) -> str:
    with openai_client(url) as client:
        if not stream:
            return client.responses.create(model=OPENAI_MODEL, input="Say hi.").output_text
        with client.responses.stream(model=OPENAI_MODEL, input="Say hi.") as events:
            return events.get_final_response().output_text


def gemini(url: str, *, stream: bool = False) -> str:
    with gemini_client(url) as client:
        if not stream:
            answer = client.models.generate_content(model=GEMINI_MODEL, contents="Say hi.")
            return answer.text or ""
        parts = client.models.generate_content_stream(model=GEMINI_MODEL, contents="Say hi.")
        return "".join(p.text or "" for p in parts)
