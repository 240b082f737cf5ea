"""The gateway of a Ray worker process (no Ray needed): started with the first run a worker
opens, each run a token of its own standing for the real key, the worker engine's rate
limiters paced at (in Redis with a Redis store), a shared gateway's token read from the
worker's environment, and the plan carried to the worker in its job."""

from __future__ import annotations

import asyncio
import pickle
import socket
import threading
from pathlib import Path
from urllib.parse import urlsplit

import anthropic
import pytest
import redis
from tests.gateway.helpers import ANTHROPIC_MODEL, CANARY_KEY, FAST_POLICY, MESSAGES

from backstay.adapters.cli.claude_code import ClaudeCodeAdapter
from backstay.adapters.contract import AgentRequest
from backstay.adapters.gateway_wiring import aopen_run, use_gateway
from backstay.cli._gateway_runs import agent_gateway
from backstay.errors import ConfigError
from backstay.executors._stores import open_worker_engine
from backstay.executors.ray_gateway import (
    GATEWAY_TOKEN_ENV,
    WorkerGateway,
    WorkerRunGateway,
    current_worker_gateway,
    use_worker_gateway,
    worker_gateway,
)
from backstay.executors.ray_worker import WorkerJob
from backstay.fakeprovider import FakeProvider, Fault, FaultKind, Scenario
from backstay.fallback.rules import FallbackRules
from backstay.gateway.runs import TOKEN_PREFIX
from backstay.idempotency.settings import GuardSettings
from backstay.policy.ratelimit import RateLimitSettings
from backstay.store.location import StoreLocation

PLAN = WorkerGateway(policy=FAST_POLICY, deadline_s=60.0, parallel=2)


def _job(store: str, state_dir: Path, **extra: object) -> WorkerJob:
    return WorkerJob(
        store=store,
        state_dir=str(state_dir),
        guard_settings=GuardSettings(),
        breaker=None,
        fallback_rules=FallbackRules(),
        **extra,  # type: ignore[arg-type]
    )


def _open(gateway: WorkerRunGateway, upstream: str) -> str:
    return gateway.open_run(
        provider="anthropic",
        key=CANARY_KEY,
        upstream=upstream,
        task="op-1",
        attempt="op-1/1",
        traceparent=None,
        model=ANTHROPIC_MODEL,
    )


def _refused(url: str) -> bool:
    parts = urlsplit(url)
    try:
        socket.create_connection((parts.hostname, parts.port), timeout=2).close()
    except OSError:
        return True
    return False


def test_a_worker_gateway_starts_with_its_first_run_and_stands_in_for_the_key() -> None:
    gateway = WorkerRunGateway(PLAN)
    assert not gateway.started  # a worker driving only API tasks starts none
    assert gateway.deadline_s == 60.0
    faults = (Fault(kind=FaultKind.OVERLOADED, first=1, retry_after_s=0.001),)
    try:
        with FakeProvider(Scenario(faults=faults)) as fake:
            token = _open(gateway, fake.url)
            assert gateway.started
            assert token.startswith(TOKEN_PREFIX)
            assert CANARY_KEY not in token
            assert urlsplit(gateway.url).hostname == "127.0.0.1"
            with anthropic.Anthropic(base_url=gateway.url, api_key=token, max_retries=0) as client:
                reply = client.messages.create(
                    model=ANTHROPIC_MODEL,
                    max_tokens=20,
                    messages=MESSAGES,  # type: ignore[arg-type]
                )
            assert reply.content
            stats = fake.stats()
        counts = gateway.close_run(token)
        assert counts is not None
        assert counts.requests == stats.requests == 2  # the 529, retried by the gateway
        assert gateway.close_run(token) is None  # revoked
        url = gateway.url
    finally:
        gateway.stop()
    assert not gateway.started
    assert _refused(url)


def test_a_worker_gateway_is_started_off_the_attempt_s_loop(tmp_path: Path) -> None:
    """The first run opened starts the gateway, which ``aopen_run`` does on a worker
    thread (``calls_block``); once it serves, runs are opened on the loop."""
    gateway = WorkerRunGateway(PLAN)
    request = AgentRequest(
        model=ANTHROPIC_MODEL,
        prompt="hi",
        workspace=tmp_path,
        output_dir=tmp_path / "out",
        timeout_s=60.0,
        env={"ANTHROPIC_API_KEY": CANARY_KEY},
    )
    wiring = ClaudeCodeAdapter.gateway_wiring
    started_on: list[str] = []
    start = gateway._start

    def recorded() -> object:
        started_on.append(threading.current_thread().name)
        return start()

    gateway._start = recorded  # type: ignore[method-assign]

    async def main() -> tuple[object, object]:
        with use_gateway(gateway):
            first = await aopen_run(wiring, request, operation_id="op", attempt_id="op/1")
            second = await aopen_run(wiring, request, operation_id="op", attempt_id="op/2")
        return first, second

    try:
        assert gateway.calls_block
        first, second = asyncio.run(main())
        assert first is not None
        assert second is not None
        assert not gateway.calls_block
    finally:
        gateway.stop()
    # The first opening (which started the gateway) on a worker thread, the second on the
    # loop's; ``url`` is read on the loop once the run is open.
    assert started_on[0].startswith("backstay-run-call")
    assert threading.main_thread().name in started_on[1:]


def test_a_worker_gateway_paces_at_the_worker_engine_s_limiters_in_redis(
    redis_location: StoreLocation, tmp_path: Path
) -> None:
    limits = {"anthropic": RateLimitSettings(requests_per_minute=600)}
    job = _job(redis_location.text, tmp_path, rate_limits=limits, gateway=PLAN)
    client = redis.Redis.from_url(redis_location.text.partition("?")[0])
    with open_worker_engine(job) as engine:
        gateway = worker_gateway(job.gateway, engine)
        assert isinstance(gateway, WorkerRunGateway)
        assert worker_gateway(job.gateway, engine) is gateway  # one per process and batch
        try:
            with FakeProvider() as fake:
                token = _open(gateway, fake.url)
                with anthropic.Anthropic(base_url=gateway.url, api_key=token, max_retries=0) as sdk:
                    sdk.messages.create(
                        model=ANTHROPIC_MODEL,
                        max_tokens=20,
                        messages=MESSAGES,  # type: ignore[arg-type]
                    )
            gateway.close_run(token)
        finally:
            gateway.stop()
    namespace = redis_location.text.partition("namespace=")[2]
    keys = [k.decode() for k in client.scan_iter(match=f"{{{namespace}:lim:anthropic*")]
    client.close()
    assert keys, "the worker's gateway did not pace at the batch's Redis limiter"


def test_no_plan_no_gateway_and_a_shared_one_needs_the_worker_s_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with open_worker_engine(_job(str(tmp_path), tmp_path)) as engine:
        assert worker_gateway(None, engine) is None
        monkeypatch.delenv(GATEWAY_TOKEN_ENV, raising=False)
        shared = WorkerGateway(policy=FAST_POLICY, deadline_s=60.0, url="http://127.0.0.1:9")
        with pytest.raises(ConfigError, match=GATEWAY_TOKEN_ENV) as err:
            worker_gateway(shared, engine)
    assert "on a Ray worker" in str(err.value)


def test_the_plan_travels_in_the_job_and_is_set_for_a_block(tmp_path: Path) -> None:
    job = _job(str(tmp_path), tmp_path, gateway=PLAN)
    assert pickle.loads(pickle.dumps(job)) == job  # noqa: S301 - its own bytes
    assert current_worker_gateway() is None
    with use_worker_gateway(PLAN):
        assert current_worker_gateway() is PLAN
    assert current_worker_gateway() is None
    with pytest.raises(ConfigError, match="parallel"):
        WorkerGateway(policy=FAST_POLICY, deadline_s=60.0, parallel=0)


def test_the_gateway_of_batch_and_resume_gives_ray_workers_a_plan_unless_it_is_off() -> None:
    with agent_gateway(["claude-code"], parallel=3) as url:
        plan = current_worker_gateway()
        assert url is not None
        assert plan is not None
        assert (plan.url, plan.parallel) == (None, 3)  # each worker starts its own
    assert current_worker_gateway() is None
    with agent_gateway(["claude-code"], enabled=False):  # --no-gateway, gateway: false
        assert current_worker_gateway() is None
    with agent_gateway(["anthropic-api"]):  # no agent CLI: no gateway anywhere
        assert current_worker_gateway() is None


def test_a_ray_batch_starts_no_gateway_of_its_own_and_gives_the_workers_the_plan() -> None:
    before = {t.ident for t in threading.enumerate()}
    with agent_gateway(["claude-code"], parallel=2, on_workers=True) as url:
        plan = current_worker_gateway()
        started = {t.ident for t in threading.enumerate()} - before
        assert url is None  # no gateway in the driver: the workers start theirs
        assert plan is not None
        assert (plan.url, plan.parallel) == (None, 2)
        assert not started
    assert current_worker_gateway() is None
