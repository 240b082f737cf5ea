"""Benchmarks: classification accuracy and cost, against the official SDKs' own retry rule.

Peers, measured in the same run:
* ``openai SDK`` / ``anthropic SDK``: the client's ``_should_retry(response)``, the decision
  the SDK takes for every error response (status and ``x-should-retry``; body never read),
  and ``_make_status_error_from_response``, the work the SDK already does per error.

Then the retry frameworks (``retry.py``, ``async_retry.py``): backstay's retry drivers
against tenacity, stamina and backoff in the same process — success-path overhead, cost per
retry, 10,000 concurrent retried calls — and memory per policy and policy lookup.

Last, the engine (``engine.py``): tasks per second through the durable ``Engine`` and the
cost per task state transition, beside reference per-task figures for Celery and Ray; then
the Ray executor (``ray_executor.py``): the same batch of fake-provider runs through the
local executor and through ``--executor ray`` on a local cluster, the overhead per run.

And the fake provider (``fake_provider.py``): requests per second it answers, with the load
from a separate process, against a bare aiohttp server returning a fixed body.

Last, goodput under a provider's rate limit (``goodput.py``): M calls by N workers against
the fake provider enforcing R requests (or tokens) per minute, through backstay, the openai
SDK's own retries and tenacity, as a ratio of the ideal M / R and the share of 429s.

And fallback through a provider outage (``fallback.py``): a 60 s batch whose primary
(Anthropic API) is down for 30 s, through backstay's ``FallbackChain`` and litellm's
``Router`` with the same fallback: completion time, slowest calls, requests wasted on the
down provider, and how soon work returns to the primary.

Then the agent runtime (``agent_runtime.py``): backstay's overhead per agent step with the
SQLite run store, and the peak memory of 100 concurrent agent sessions.

Last, shared state on Redis (``shared_state.py``): the cost per decision of the Redis
breaker, limiter and lease against the in-memory and SQLite ones (same run), and the
goodput of N processes sharing one Redis limiter against each with its own.

And start-up (``startup.py``): the CPU time of ``import backstay``, ``backstay --version``
and the help of the command line in a fresh process, beside ``import tenacity``; one
``backstay run`` beside ``import anthropic`` (``run_cpu.py``); a batch's CPU per task at
1,000 and 10,000 tasks beside the bare SDK call (``batch_cpu.py``); how soon a batch of
100,000 tasks can start and the longest Redis script recording it (``register.py``).

And agent sessions through the gateway (``gateway_sessions.py``): tokens per successful
20-turn session under a 5 % rate of 529s, the whole session run again (no gateway) against
the gateway retrying the failed request; what the gateway's spending ledger keeps after
20,000 requests on SQLite and Redis, beside a row per request (``gateway_ledger.py``).

Then the gateway itself (``gateway.py``), beside litellm's proxy: added latency p50 / p99 at
200 requests/s, requests/s and CPU per request through one process, memory with 1,000
concurrent streams, and two gateways on one Redis holding one provider limit (time / (M / R));
its added latency beside two floors in the same run (``gateway_floor.py``): a byte pipe
and a bare aiohttp proxy.

Last, scale (``scale.py``): batches of 1,000, 10,000 and 100,000 tasks of an in-process
adapter through the engine on SQLite and on Redis in one process (peak memory, CPU per
task), then the commands that read them (``status.py``: ``status``, ``status --json``,
``health --json``, ``report``).

Run with ``make bench``. Prints one table per section; ratios are backstay / peer.
"""

from __future__ import annotations

import itertools
import json
import sys
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai

sys.path.insert(0, str(Path(__file__).parent))

import agent_runtime
import async_retry
import backstay
import batch_cpu
import engine
import fake_provider
import fallback
import field_corpus
import gateway
import gateway_floor
import gateway_ledger
import gateway_sessions
import goodput
import instructions
import otel_overhead
import ray_executor
import register
import retry
import run_cpu
import scale
import shared_state
import startup
from corpus import CASES

REPEAT = 5


def _response_factory(client: object) -> Callable[..., Any]:
    """Responses of the httpx flavour this SDK version uses (httpx or httpx2)."""
    module = sys.modules[type(client).__mro__[1].__module__]
    httpx_mod = getattr(module, "httpx2", None) or getattr(module, "httpx", None) or httpx
    request = httpx_mod.Request("POST", "http://127.0.0.1:9/v1/messages")

    def build(status: int, headers: dict[str, str], body: bytes) -> Any:
        return httpx_mod.Response(status, headers=headers, content=body, request=request)

    return build


def _best_us(fn: Callable[[], object], number: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=REPEAT)) / number * 1e6


FIELD = Path(__file__).parents[1] / "tests" / "classify" / "data" / "field_provider_responses.json"


def _field_accuracy(oai: Any, ant: Any, oresp: Any, aresp: Any) -> None:
    """The same comparison on the field cases gathered from public threads (not ambiguous)."""
    cases = [
        c
        for c in json.loads(FIELD.read_text(encoding="utf-8"))
        if not c["ambiguous"] and isinstance(c["status"], int)  # the SDKs need a response
    ]
    right = {"backstay retry": 0, "openai SDK retry": 0, "anthropic SDK retry": 0}
    for case in cases:
        body = case["body"] if isinstance(case["body"], str) else json.dumps(case["body"])
        failure = backstay.classify_response(
            case["status"], case["headers"], body, provider=case["provider"]
        )
        expected = case["expected_retryable"]
        right["backstay retry"] += failure.retryable is expected
        o = oresp(case["status"], case["headers"], body.encode())
        a = aresp(case["status"], case["headers"], body.encode())
        right["openai SDK retry"] += oai._should_retry(o) is expected
        right["anthropic SDK retry"] += ant._should_retry(a) is expected
    n = len(cases)
    print(f"\nRetry decisions on {n} field cases (tests/classify/data, gathered separately)")
    for name, count in right.items():
        print(f"  {name:<22} {count:>3}/{n}  ({count / n:.0%})")
    ratio = right["backstay retry"] / max(1, right["openai SDK retry"])
    print(f"  retry decisions right, backstay / openai SDK: {ratio:.2f}x")


def _wide_accuracy(oai: Any, ant: Any, oresp: Any, aresp: Any) -> None:
    """The widened field corpus: the whole of it and its unseen third (never tuned on), on
    kind and retryability, and retry decisions beside the SDKs' status-only rule."""
    cases = field_corpus.provider_cases() + field_corpus.agent_cases()
    _development, unseen = field_corpus.split(cases)

    def sdk_rule(client: Any, build: Any) -> field_corpus.StatusRule:
        return lambda status, headers, body: bool(
            client._should_retry(build(status, headers, body.encode()))
        )

    print(f"\nWidened field corpus ({len(cases)} real failures, tests/classify/data/wide_*.json)")
    for name, part in (("whole corpus", cases), ("unseen third", unseen)):
        result, misses = field_corpus.score(part)
        mine, openai_rule = field_corpus.retry_decisions(part, sdk_rule(oai, oresp))
        _, anthropic_rule = field_corpus.retry_decisions(part, sdk_rule(ant, aresp))
        print(f"  {name}: backstay kind and retryability {result}")
        print(
            f"    retry decisions ({mine.total} provider cases with a status): "
            f"backstay {mine}, openai SDK {openai_rule}, anthropic SDK {anthropic_rule}"
        )
        if misses:
            print("    backstay misses: " + ", ".join(misses))


def _fresh_body(n: int) -> str:
    """An Anthropic 429 whose message is new every time: the cost without remembered matches
    (real bodies repeat their message and differ only in the request id)."""
    return json.dumps(
        {
            "type": "error",
            "error": {"type": "rate_limit_error", "message": f"rate limited ({n})"},
            "request_id": f"req_{n}",
        }
    )


def _accuracy(oai: Any, ant: Any, oresp: Any, aresp: Any) -> None:
    """Kind and retry decisions on the labelled corpus, the field cases and the widened
    corpus, beside the SDKs' rule."""
    right = {
        "backstay kind": 0,
        "backstay retry": 0,
        "openai SDK retry": 0,
        "anthropic SDK retry": 0,
    }
    misses: list[str] = []
    for case in CASES:
        failure = backstay.classify_response(
            case.status, case.headers, case.body, provider=case.provider
        )
        right["backstay kind"] += failure.kind == case.kind
        right["backstay retry"] += failure.retryable == case.retryable
        if (failure.kind, failure.retryable) != (case.kind, case.retryable):
            misses.append(f"{case.name}: {failure.kind}/{failure.retryable}")
        o = oresp(case.status, case.headers, case.body.encode())
        a = aresp(case.status, case.headers, case.body.encode())
        right["openai SDK retry"] += oai._should_retry(o) == case.retryable
        right["anthropic SDK retry"] += ant._should_retry(a) == case.retryable

    n = len(CASES)
    print(f"Accuracy on {n} labelled provider failures (bench/corpus.py)")
    for name, count in right.items():
        print(f"  {name:<22} {count:>3}/{n}  ({count / n:.0%})")
    ratio = right["backstay retry"] / max(1, right["openai SDK retry"])
    print(f"  retry decisions right, backstay / openai SDK: {ratio:.2f}x")
    if misses:
        print("  backstay misses: " + ", ".join(misses))
    _field_accuracy(oai, ant, oresp, aresp)
    _wide_accuracy(oai, ant, oresp, aresp)


def main() -> None:
    oai = openai.OpenAI(api_key="sk-bench-0000000000000000", base_url="http://127.0.0.1:9/v1")
    ant = anthropic.Anthropic(api_key="sk-ant-bench-000000000000", base_url="http://127.0.0.1:9")
    oresp, aresp = _response_factory(oai), _response_factory(ant)

    _accuracy(oai, ant, oresp, aresp)

    case = CASES[0]
    counter = itertools.count()
    body = case.body.encode()
    resp = oresp(429, case.headers, body)
    sdk_error = oai._make_status_error_from_response(resp)
    claude = json.dumps(
        {
            "type": "result",
            "subtype": "success",
            "is_error": True,
            "api_error_status": 429,
            "result": "API Error: Request rejected (429) · Rate limited",
        }
    )
    conn = httpx.ConnectError("[Errno 111] Connection refused")
    conn.__cause__ = ConnectionRefusedError(111, "Connection refused")
    # Huge texts: classification reads a bounded head and tail (classify/_bounds.py).
    huge = Exception("Overloaded " + "x" * 10_000_000)
    page = b"<html><body>" + b"<p class='row'>upstream unavailable</p>\n" * 100_000 + b"</html>"
    sdk_html = ant._make_status_error_from_response(aresp(502, {"content-type": "text/html"}, page))

    rows = [
        (
            "classify_response (429 JSON)",
            lambda: backstay.classify_response(429, case.headers, case.body, provider="anthropic"),
            5_000,
        ),
        ("classify(SDK RateLimitError)", lambda: backstay.classify(sdk_error), 5_000),
        ("classify(httpx.ConnectError)", lambda: backstay.classify(conn), 5_000),
        (
            "classify_response, every message new (no cache)",
            lambda: backstay.classify_response(
                429, case.headers, _fresh_body(next(counter)), provider="anthropic"
            ),
            5_000,
        ),
        (
            "classify_output(claude-code)",
            lambda: backstay.classify_output(claude, agent="claude-code", exit_code=1),
            5_000,
        ),
        ("classify(Exception), 10 MB message", lambda: backstay.classify(huge), 5),
        ("classify(SDK error), 4 MB HTML page", lambda: backstay.classify(sdk_html), 5),
    ]
    peer_build = _best_us(
        lambda: oai._make_status_error_from_response(oresp(429, case.headers, body)), 5_000
    )
    peer_decide = _best_us(lambda: oai._should_retry(resp), 20_000)
    print()
    print("Cost per call (best of 5, µs); peer = openai SDK building its error from the response")
    print(f"  {'openai SDK _make_status_error_from_response':<44} {peer_build:8.2f}")
    print(f"  {'openai SDK _should_retry':<44} {peer_decide:8.2f}")
    for name, fn, number in rows:
        us = _best_us(fn, number)
        print(f"  {name:<44} {us:8.2f}   {us / peer_build:5.2f}x the SDK's error construction")

    retry.report()
    async_retry.report()
    instructions.report()
    retry.print_targets()
    engine.report()
    ray_executor.report()
    otel_overhead.report()
    fake_provider.report()
    goodput.report()
    fallback.report()
    agent_runtime.report()
    shared_state.report()
    startup.report()
    run_cpu.report()
    batch_cpu.report()
    register.report()
    gateway_sessions.report()
    gateway_ledger.report()
    scale.report()
    gateway.report()
    gateway_floor.report()


if __name__ == "__main__":
    main()
