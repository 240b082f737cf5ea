"""Run tokens: a gateway given a ``RunTokens`` table serves only live run tokens, swaps
each for the run's real key and upstream, counts per token what the provider answered
(refused requests and tokens included), attributes its events to the run, moves a
request to the run's fallback model while its circuit is open, and makes each request a
span under the run's trace."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import anthropic
import httpx
import openai
import pytest
from google import genai
from google.genai import types
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tests.gateway.helpers import (
    ANTHROPIC_MODEL,
    CANARY_KEY,
    FAST_POLICY,
    MESSAGES,
)

from backstay.breaker import BreakerRegistry, BreakerSettings
from backstay.errors import ConfigError
from backstay.events import EVENTS_FILE, recording
from backstay.fakeprovider import FakeProvider, Fault, FaultKind, Scenario
from backstay.gateway import Gateway, GatewaySettings, RequestFellBack, RequestRetried, Upstreams
from backstay.gateway.runs import TOKEN_PREFIX, RunTicket, RunTokens
from backstay.testing import capture_events

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-01"


class _KeyEcho(BaseHTTPRequestHandler):
    """An upstream that notes each request's key and answers an Anthropic message."""

    seen: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", "0")))
        bearer = self.headers.get("authorization", "").removeprefix("Bearer ")
        type(self).seen.append(self.headers.get("x-api-key") or bearer)
        body = json.dumps(
            {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": ANTHROPIC_MODEL,
                "content": [{"type": "text", "text": "hi"}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": 11, "output_tokens": 7},
            }
        ).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return None


@pytest.fixture
def key_echo() -> Iterator[str]:
    _KeyEcho.seen.clear()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _KeyEcho)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _gateway(runs: RunTokens, url: str, **options: Any) -> Gateway:
    settings = GatewaySettings(port=0, policy=FAST_POLICY, upstreams=Upstreams.all(url))
    return Gateway(settings, runs=runs, **options)


def test_a_run_token_reaches_the_upstream_as_the_real_key_of_its_run(key_echo: str) -> None:
    runs = RunTokens()
    elsewhere = "http://127.0.0.1:9"  # the gateway's own upstream: never used for the run
    ticket = RunTicket(provider="anthropic", key=CANARY_KEY, upstream=key_echo, task="t1")
    token = runs.open(ticket)
    assert token.startswith(TOKEN_PREFIX)
    with (
        _gateway(runs, elsewhere) as gateway,
        anthropic.Anthropic(base_url=gateway.url, api_key=token, max_retries=0) as client,
    ):
        client.messages.create(model=ANTHROPIC_MODEL, max_tokens=20, messages=MESSAGES)  # type: ignore[arg-type]
    assert _KeyEcho.seen == [CANARY_KEY]
    tally = runs.close(token)
    assert tally is not None
    assert (tally.requests, tally.input_tokens, tally.output_tokens) == (1, 11, 7)


def test_an_unknown_or_revoked_token_is_refused_in_the_providers_format(key_echo: str) -> None:
    runs = RunTokens()
    token = runs.open(RunTicket(provider="anthropic", key=CANARY_KEY, upstream=key_echo))
    runs.close(token)
    with _gateway(runs, key_echo) as gateway:
        for key in (token, CANARY_KEY, TOKEN_PREFIX + "made-up"):
            with (
                anthropic.Anthropic(base_url=gateway.url, api_key=key, max_retries=0) as client,
                pytest.raises(anthropic.AuthenticationError) as refused,
            ):
                client.messages.create(model=ANTHROPIC_MODEL, max_tokens=20, messages=MESSAGES)  # type: ignore[arg-type]
            assert refused.value.status_code == 401
            assert "run token" in str(refused.value)
        gemini = httpx.post(
            f"{gateway.url}/v1beta/models/gemini-2.5-flash:generateContent",
            headers={"x-goog-api-key": token},
            json={"contents": []},
            timeout=20,
        )
    assert gemini.status_code == 401
    assert gemini.json()["error"]["status"] == "UNAUTHENTICATED"
    assert _KeyEcho.seen == []


def test_a_token_is_for_its_own_provider_only(key_echo: str) -> None:
    runs = RunTokens()
    token = runs.open(RunTicket(provider="gemini", key=CANARY_KEY, upstream=key_echo))
    with (
        _gateway(runs, key_echo) as gateway,
        anthropic.Anthropic(base_url=gateway.url, api_key=token, max_retries=0) as client,
        pytest.raises(anthropic.AuthenticationError),
    ):
        client.messages.create(model=ANTHROPIC_MODEL, max_tokens=20, messages=MESSAGES)  # type: ignore[arg-type]
    assert _KeyEcho.seen == []


def test_the_tally_counts_refused_requests_and_the_tokens_of_every_wire_format() -> None:
    runs = RunTokens()
    faults = (Fault(kind=FaultKind.OVERLOADED, first=1, retry_after_s=0.001),)
    with FakeProvider(Scenario(faults=faults)) as fake, _gateway(runs, fake.url) as gateway:
        tokens = {
            provider: runs.open(RunTicket(provider=provider, key=CANARY_KEY, task=provider))
            for provider in ("anthropic", "openai", "gemini")
        }
        with (
            anthropic.Anthropic(
                base_url=gateway.url, api_key=tokens["anthropic"], max_retries=0
            ) as claude,
            claude.messages.stream(
                model=ANTHROPIC_MODEL,
                max_tokens=50,
                messages=MESSAGES,  # type: ignore[arg-type]
            ) as events,
        ):
            events.get_final_message()
        with (
            openai.OpenAI(
                base_url=gateway.url + "/v1", api_key=tokens["openai"], max_retries=0
            ) as client,
            client.responses.stream(model="gpt-5", input="Say hi.") as stream,
        ):
            stream.get_final_response()
        with genai.Client(
            api_key=tokens["gemini"], http_options=types.HttpOptions(base_url=gateway.url)
        ) as gem:
            for _ in gem.models.generate_content_stream(model="gemini-2.5-flash", contents="Hi."):
                pass
        stats = fake.stats()
    tallies = {provider: runs.close(token) for provider, token in tokens.items()}
    assert all(t is not None for t in tallies.values())
    assert sum(t.requests for t in tallies.values() if t) == stats.requests == 4
    assert tallies["anthropic"] is not None
    assert tallies["anthropic"].refused == 1
    assert sum(t.input_tokens for t in tallies.values() if t) == stats.input_tokens
    assert sum(t.output_tokens for t in tallies.values() if t) == stats.output_tokens
    assert all(t.output_tokens > 0 for t in tallies.values() if t)


def test_a_retried_request_is_an_event_of_its_run_and_a_span_under_its_trace(
    tmp_path: Path,
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    runs = RunTokens()
    ticket = RunTicket(
        provider="anthropic", key=CANARY_KEY, task="op-1", attempt="op-1/2", traceparent=TRACEPARENT
    )
    token = runs.open(ticket)
    faults = (Fault(kind=FaultKind.OVERLOADED, first=1, retry_after_s=0.001),)
    with (
        capture_events() as events,
        recording(tmp_path / EVENTS_FILE, ["op-1"]),
        FakeProvider(Scenario(faults=faults)) as fake,
        _gateway(runs, fake.url, tracer_provider=provider) as gateway,
        anthropic.Anthropic(base_url=gateway.url, api_key=token, max_retries=0) as c,
    ):
        c.messages.create(model=ANTHROPIC_MODEL, max_tokens=20, messages=MESSAGES)  # type: ignore[arg-type]
    retried = [e for e in events if isinstance(e, RequestRetried)]
    assert [(e.task, e.attempt, e.attempts) for e in retried] == [("op-1", "op-1/2", 2)]
    logged = (tmp_path / EVENTS_FILE).read_text(encoding="utf-8").splitlines()
    assert "request.retried" in [json.loads(line)["event"] for line in logged]
    (span,) = exporter.get_finished_spans()
    assert span.context is not None
    assert f"{span.context.trace_id:032x}" == TRACE_ID
    assert span.parent is not None
    assert f"{span.parent.span_id:016x}" == "00f067aa0ba902b7"
    attributes = dict(span.attributes or {})
    assert attributes["backstay.operation_id"] == "op-1"
    assert attributes["backstay.attempt_id"] == "op-1/2"
    assert attributes["backstay.gateway.attempts"] == 2
    assert attributes["http.response.status_code"] == 200
    text = json.dumps([e.to_dict() for e in events], default=str) + repr(span.attributes)
    assert CANARY_KEY not in text
    assert token not in text


def test_a_request_moves_to_the_runs_fallback_model_while_its_circuit_is_open() -> None:
    runs = RunTokens()
    fallback = "claude-haiku-4-5"
    ticket = RunTicket(
        provider="anthropic",
        key=CANARY_KEY,
        task="op-f",
        model=ANTHROPIC_MODEL,
        fallback_model=fallback,
    )
    token = runs.open(ticket)
    breakers = BreakerRegistry(
        settings=BreakerSettings(failure_threshold=1, minimum_calls=1, open_duration_s=600.0)
    )
    faults = (Fault(kind=FaultKind.SERVER_ERROR, model=ANTHROPIC_MODEL),)
    policy = FAST_POLICY.derive(max_attempts=1)
    with capture_events() as events, FakeProvider(Scenario(faults=faults), log_path=None) as fake:
        settings = GatewaySettings(port=0, policy=policy, upstreams=Upstreams.all(fake.url))
        with (
            Gateway(settings, runs=runs, breakers=breakers) as gateway,
            anthropic.Anthropic(base_url=gateway.url, api_key=token, max_retries=0) as client,
        ):
            with pytest.raises(anthropic.InternalServerError):
                client.messages.create(model=ANTHROPIC_MODEL, max_tokens=20, messages=MESSAGES)  # type: ignore[arg-type]
            answer = client.messages.create(
                model=ANTHROPIC_MODEL,
                max_tokens=20,
                messages=MESSAGES,  # type: ignore[arg-type]
            )
        by_model = dict(fake.stats().by_status)
    assert answer.model == fallback
    fell = [e for e in events if isinstance(e, RequestFellBack)]
    assert [(e.model, e.fallback_model, e.task, e.reason, e.operation) for e in fell] == [
        (ANTHROPIC_MODEL, fallback, "op-f", "circuit_open", "op-f")
    ]
    assert by_model == {500: 1, 200: 1}


def test_a_ticket_names_a_provider_and_a_key() -> None:
    with pytest.raises(ConfigError, match="provider"):
        RunTicket(provider="mistral", key=CANARY_KEY)
    with pytest.raises(ConfigError, match="key"):
        RunTicket(provider="openai", key="")
    assert CANARY_KEY not in repr(RunTicket(provider="openai", key=CANARY_KEY))
