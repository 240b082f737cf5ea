"""Done when: with OTEL_EXPORTER_OTLP_ENDPOINT pointing at a local OTLP/HTTP receiver, a
``backstay batch`` against the fake provider exports one trace per task whose attempt
spans carry the GenAI attributes, failed attempts with ``error.type``, and the provider
saw each attempt's trace id in ``traceparent``."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any, Final

import pytest
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from tests.adapters.support import CANARY_KEY
from tests.observe.otlp_receiver import OtlpReceiver, attributes, spans_named
from tests.observe.support import BACKSTAY, LIMIT_S

from backstay.fakeprovider import FakeProvider, Fault, FaultKind, Scenario

HAIKU: Final = "claude-haiku-4-5"
SCENARIO: Final = Scenario(
    faults=(
        Fault(kind=FaultKind.RATE_LIMIT, model="claude-sonnet-4-5", first=1, retry_after_s=0.1),
        Fault(kind=FaultKind.CONTEXT_OVERFLOW, model="claude-opus-4-1", first=100),
    )
)


def _suite(folder: Path, url: str) -> Path:
    path = folder / "suite.yaml"
    path.write_text(
        f"""suite: traced
defaults:
  adapter: anthropic-api
  model: claude-haiku-4-5
  timeout_s: 30
  policy: {{extends: agent_dispatch, initial_delay_s: 0.05, max_delay_s: 0.2}}
adapters:
  anthropic-api: {{base_url: "{url}", api_key_env: TRACED_ANTHROPIC_KEY}}
tasks:
  - {{id: ok, prompt: "Say hello"}}
  - {{id: flaky, model: claude-sonnet-4-5, prompt: "Say hello"}}
  - {{id: broken, model: claude-opus-4-1, prompt: "Say hello"}}
""",
        encoding="utf-8",
    )
    return path


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("otel")
    log = tmp / "requests.jsonl"
    with OtlpReceiver() as receiver, FakeProvider(SCENARIO, log_path=log) as fake:
        env = {
            **os.environ,
            "TRACED_ANTHROPIC_KEY": CANARY_KEY,
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
            "OTEL_SERVICE_NAME": "backstay-test",
        }
        env.pop("OTEL_SDK_DISABLED", None)
        ran = subprocess.run(
            [*BACKSTAY, "batch", str(_suite(tmp, fake.url)), "--state-dir", str(tmp / "state")],
            env=env,
            capture_output=True,
            text=True,
            timeout=LIMIT_S,
            check=False,
        )
        spans = receiver.spans()
        services = receiver.service_names()
        metrics = receiver.metric_names()
    requests = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    return {
        "ran": ran,
        "spans": spans,
        "services": services,
        "metrics": metrics,
        "requests": requests,
    }


def _tasks(traced: dict[str, Any]) -> dict[str, Span]:
    spans: list[Span] = traced["spans"]
    return {
        attributes(s)["backstay.task_id"]: s
        for s in spans_named(spans, "invoke_agent ")
        if "backstay.task_id" in attributes(s)
    }


def _attempts(traced: dict[str, Any]) -> list[Span]:
    return list(spans_named(traced["spans"], "chat "))


def test_the_batch_ran_with_one_failed_task(traced: dict[str, Any]) -> None:
    assert traced["ran"].returncode == 3, traced["ran"].stderr


def test_one_trace_per_task(traced: dict[str, Any]) -> None:
    tasks = _tasks(traced)
    assert set(tasks) == {"ok", "flaky", "broken"}
    assert len({span.trace_id for span in tasks.values()}) == 3
    assert traced["services"] == {"backstay-test"}
    (workflow,) = spans_named(traced["spans"], "invoke_workflow ")
    for span in tasks.values():
        assert not span.parent_span_id
        assert [link.span_id for link in span.links] == [workflow.span_id]


def test_attempt_spans_carry_the_genai_attributes(traced: dict[str, Any]) -> None:
    tasks = _tasks(traced)
    attempts = _attempts(traced)
    assert len(attempts) == 4  # ok 1, flaky 2, broken 1
    for span in attempts:
        attrs = attributes(span)
        assert span.kind == Span.SpanKind.SPAN_KIND_CLIENT
        assert attrs["gen_ai.operation.name"] == "chat"
        assert attrs["gen_ai.provider.name"] == "anthropic"
        assert span.name == f"chat {attrs['gen_ai.request.model']}"
        assert {"backstay.operation_id", "backstay.attempt_id", "backstay.attempt"} <= set(attrs)
        owner = tasks[attrs["backstay.operation_id"].split(":")[1]]
        assert (span.trace_id, span.parent_span_id) == (owner.trace_id, owner.span_id)
    ok = [
        attributes(s)
        for s in attempts
        if attributes(s)["gen_ai.request.model"] == "claude-haiku-4-5"
    ]
    assert ok[0]["gen_ai.response.model"] == "claude-haiku-4-5"
    assert ok[0]["gen_ai.usage.input_tokens"] > 0
    assert ok[0]["gen_ai.usage.output_tokens"] > 0


def test_failed_attempts_carry_error_type_and_the_retry_delay(traced: dict[str, Any]) -> None:
    failed = {
        attributes(s)["gen_ai.request.model"]: attributes(s)
        for s in _attempts(traced)
        if "error.type" in attributes(s)
    }
    assert failed["claude-sonnet-4-5"]["error.type"] == "rate_limit"
    assert failed["claude-sonnet-4-5"]["backstay.retry_delay_s"] > 0
    assert failed["claude-opus-4-1"]["error.type"] == "context_limit"


def test_waits_are_child_spans_of_the_task(traced: dict[str, Any]) -> None:
    tasks = _tasks(traced)
    (wait,) = spans_named(traced["spans"], "wait ")
    assert attributes(wait)["backstay.wait.reason"] == "retry_after"
    assert wait.parent_span_id == tasks["flaky"].span_id
    assert attributes(tasks["flaky"])["backstay.wait_reasons"] == ["retry_after"]


def test_the_provider_saw_each_attempts_trace_context(traced: dict[str, Any]) -> None:
    seen = {r["traceparent"][:52] for r in traced["requests"]}  # the flags left out
    sent = {f"00-{span.trace_id.hex()}-{span.span_id.hex()}" for span in _attempts(traced)}
    assert len(traced["requests"]) == 4
    assert seen == sent


def test_genai_metrics_are_exported(traced: dict[str, Any]) -> None:
    assert {"gen_ai.client.operation.duration", "gen_ai.client.token.usage"} <= traced["metrics"]


def test_no_key_is_exported(traced: dict[str, Any]) -> None:
    for span in traced["spans"]:
        assert CANARY_KEY not in str(attributes(span))
