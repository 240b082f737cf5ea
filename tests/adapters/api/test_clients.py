"""``backstay.adapters.api._clients``: one SDK client per adapter, model, base URL and key in
a ``shared_clients`` block, reused by every attempt and closed when the block ends; a new
client per attempt outside one.

The engine opens a block around the tasks it drives. Against the fake provider, through the
official SDKs, a counting TCP relay in front of it is the witness: a batch makes one
connection, every request still carries its own ``Idempotency-Key``, and the connection is
closed when the batch ends."""

from __future__ import annotations

import asyncio
import selectors
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest
from tests.adapters.support import CANARY_KEY

from backstay.adapters.api._clients import (
    ClientPool,
    attempt_client,
    current_pool,
    shared_clients,
)
from backstay.adapters.api.anthropic import AnthropicApiAdapter
from backstay.adapters.api.base import ApiAdapter
from backstay.adapters.api.gemini import GeminiApiAdapter
from backstay.adapters.api.openai import OpenAIApiAdapter
from backstay.engine import Engine, TaskSpec, TaskState
from backstay.fakeprovider import FakeProvider
from backstay.policy.retry import RetryPolicy

TASKS: Final = 4
LIMIT_S: Final = 20.0
ONE_ATTEMPT: Final = RetryPolicy(name="once", max_attempts=1)
ADAPTERS: Final = {
    "anthropic-api": (AnthropicApiAdapter, "claude-haiku-4-5", "", "ANTHROPIC_API_KEY"),
    "openai-api": (OpenAIApiAdapter, "gpt-4o-mini", "/v1", "OPENAI_API_KEY"),
    "gemini-api": (GeminiApiAdapter, "gemini-2.5-flash", "", "GEMINI_API_KEY"),
}


class _Client:
    def __init__(self) -> None:
        self.closed = 0

    async def close(self) -> None:
        self.closed += 1


class Relay:
    """A TCP relay on 127.0.0.1 in front of ``upstream`` that counts the connections it
    accepts and how many are still open; stopped (every socket closed) on exit."""

    def __init__(self, upstream: int) -> None:
        self._upstream = upstream
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.accepted = 0
        self.open = 0
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def __enter__(self) -> Relay:
        self._listener.settimeout(0.1)
        self._spawn(self._accept)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(LIMIT_S)
        self._listener.close()

    def closed_all(self) -> bool:
        """Whether every connection accepted is closed, waiting up to ``LIMIT_S`` for the
        pumps to see the last ones go."""
        with self._changed:
            return self._changed.wait_for(lambda: self.open == 0, timeout=LIMIT_S)

    def _spawn(self, target: Any, *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            with self._lock:
                self.accepted += 1
                self.open += 1
            self._spawn(self._pump, client)

    def _pump(self, client: socket.socket) -> None:
        upstream = socket.create_connection(("127.0.0.1", self._upstream), timeout=LIMIT_S)
        with selectors.DefaultSelector() as sel, client, upstream:
            sel.register(client, selectors.EVENT_READ, upstream)
            sel.register(upstream, selectors.EVENT_READ, client)
            while not self._stop.is_set():
                for key, _ in sel.select(0.1):
                    data = key.fileobj.recv(65536)  # type: ignore[union-attr]
                    if not data:
                        with self._changed:
                            self.open -= 1
                            self._changed.notify_all()
                        return
                    key.data.sendall(data)


@pytest.fixture
def provider() -> Iterator[FakeProvider]:
    with FakeProvider() as fake:
        yield fake


def _specs(tmp_path: Path, name: str, url: str) -> list[TaskSpec]:
    _cls, model, suffix, variable = ADAPTERS[name]
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    return [
        TaskSpec(
            workflow_id="clients",
            task_id=f"t{i}",
            adapter=name,
            model=model,
            workspace=workspace,
            timeout_s=LIMIT_S,
            prompt="Say hello",
            env={variable: CANARY_KEY},
            config={"base_url": url + suffix},
            policy=ONE_ATTEMPT,
        )
        for i in range(TASKS)
    ]


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_a_batch_reuses_one_client_and_closes_it_at_the_end(
    tmp_path: Path, provider: FakeProvider, name: str
) -> None:
    cls = ADAPTERS[name][0]
    adapter: ApiAdapter = cls()
    with Relay(provider.port) as relay:
        url = f"http://127.0.0.1:{relay.port}"
        with Engine(
            tmp_path / "state", adapters={name: adapter}, concurrency=1, breaker=None, env={}
        ) as engine:
            summary = engine.run_sync(_specs(tmp_path, name, url))
        accepted, closed = relay.accepted, relay.closed_all()
    assert summary.count(TaskState.SUCCEEDED) == TASKS
    assert accepted == 1  # one client, one kept-alive connection, for every task
    assert closed  # by the batch, when it ended
    stats = provider.stats()
    assert stats.requests == TASKS
    assert stats.replays == 0  # each request carried its own Idempotency-Key


def test_an_attempt_outside_a_pool_builds_its_own_client_and_closes_it(
    tmp_path: Path, provider: FakeProvider
) -> None:
    adapter = AnthropicApiAdapter()
    with Relay(provider.port) as relay:
        url = f"http://127.0.0.1:{relay.port}"
        prompt = tmp_path / "prompt.md"
        prompt.write_text("Say hello", encoding="utf-8")
        for i in range(2):
            code = adapter.run(
                "claude-haiku-4-5",
                prompt,
                tmp_path,
                tmp_path / f"run{i}",
                {"base_url": url},
                LIMIT_S,
                env={"ANTHROPIC_API_KEY": CANARY_KEY},
            )
            assert code == 0
        accepted, closed = relay.accepted, relay.closed_all()
    assert accepted == 2
    assert closed


def test_a_pool_builds_one_client_per_key_and_closes_each_once() -> None:
    built: list[_Client] = []

    def build() -> _Client:
        built.append(_Client())
        return built[-1]

    async def scenario() -> ClientPool:
        async with shared_clients() as pool:
            for key in ("a", "b", "a", "a"):
                async with attempt_client(key, build):
                    pass
            async with shared_clients() as inner:  # nested: the same pool
                assert inner is pool
            assert current_pool() is pool
        assert current_pool() is None
        return pool

    pool = asyncio.run(scenario())
    assert pool.built == 2
    assert [client.closed for client in built] == [1, 1]
    assert len(pool) == 0


def test_without_a_pool_each_attempt_gets_a_new_client_closed_when_it_ends() -> None:
    built: list[_Client] = []

    def build() -> _Client:
        built.append(_Client())
        return built[-1]

    async def scenario() -> None:
        for _ in range(3):
            async with attempt_client("a", build) as client:
                assert client.closed == 0

    asyncio.run(scenario())
    assert [client.closed for client in built] == [1, 1, 1]


def test_tasks_started_in_the_block_share_its_pool() -> None:
    async def scenario() -> set[int]:
        async with shared_clients() as pool:

            async def seen() -> int:
                found = current_pool()
                assert found is pool
                return id(found)

            return set(await asyncio.gather(*(seen() for _ in range(3))))

    assert len(asyncio.run(scenario())) == 1
