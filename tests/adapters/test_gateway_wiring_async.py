"""An attempt opens and closes its run at a shared gateway without holding its event loop
(``backstay.adapters.gateway_wiring.aopen_run`` / ``OpenedRun.aclose`` over the real
``RemoteRunGateway``): a shared gateway of the test's own, a real HTTP server on
127.0.0.1, holds its answer to the opening ``POST`` (and the closing ``DELETE``) until the
test lets it go, while another coroutine on the same loop keeps running. Errors come back
as the synchronous calls give them; a cancelled opening closes the run it opened."""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest
from tests.adapters.support import CANARY_KEY

from backstay.adapters.cli.claude_code import ClaudeCodeAdapter
from backstay.adapters.contract import AgentRequest
from backstay.adapters.gateway_wiring import aopen_run, open_run, use_gateway
from backstay.errors import ConfigError
from backstay.gateway.run_admin import RemoteRunGateway

ADMIN_TOKEN: Final = "admin-token-for-the-test"
RUN_TOKEN: Final = "bsgw-run-slow-gateway"
# The most a held answer waits for the test to let it go (a failing test ends anyway).
HOLD_S: Final = 10.0
# The most loop turns a test waits for something to happen, each of 10 ms at least.
TURNS: Final = 1000


class _SlowGateway(http.server.ThreadingHTTPServer):
    """A shared gateway's runs API whose ``POST`` and ``DELETE`` answers wait for
    ``release_open`` / ``release_close``; ``status`` other than 201 refuses the opening."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.opening = threading.Event()
        self.closing = threading.Event()
        self.release_open = threading.Event()
        self.release_close = threading.Event()
        self.status = 201
        self.deleted: list[str] = []
        self.opened: list[dict[str, Any]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _SlowGateway

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _answer(self, status: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._answer(200, {"deadline_s": 30.0, "live": 0, "budgets": None, "runs": None})

    def do_POST(self) -> None:
        size = int(self.headers.get("content-length", "0"))
        self.server.opened.append(json.loads(self.rfile.read(size)))
        self.server.opening.set()
        self.server.release_open.wait(HOLD_S)
        if self.server.status != 201:
            self._answer(self.server.status, {"error": "no runs for you"})
            return
        self._answer(201, {"token": RUN_TOKEN})

    def do_DELETE(self) -> None:
        self.server.deleted.append(self.path.rsplit("/", 1)[-1])
        self.server.closing.set()
        self.server.release_close.wait(HOLD_S)
        self._answer(200, {"requests": 4, "input_tokens": 40, "output_tokens": 7})


@pytest.fixture
def slow() -> Iterator[_SlowGateway]:
    server = _SlowGateway()
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.release_open.set()
        server.release_close.set()
        server.shutdown()
        server.server_close()
        thread.join(HOLD_S)


def _request(tmp_path: Path) -> AgentRequest:
    return AgentRequest(
        model="claude-sonnet-4-5",
        workspace=tmp_path,
        output_dir=tmp_path / "out",
        timeout_s=60.0,
        prompt="hi",
        env={"PATH": "/usr/bin", "ANTHROPIC_API_KEY": CANARY_KEY},
    )


async def _until(event: threading.Event) -> None:
    for _ in range(TURNS):
        if event.is_set():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the gateway was not asked")


async def _runs_while_held(event: threading.Event, call: asyncio.Task[Any]) -> None:
    """Once ``event`` shows the gateway holds its answer to ``call``, this coroutine goes
    on turning the loop while ``call`` still waits: a call made on the loop would have
    held it until the gateway answered, and ended before."""
    await _until(event)
    ticks = 0
    for _ in range(20):
        await asyncio.sleep(0)
        ticks += 1
    assert ticks == 20
    assert not call.done(), "the call ended while the gateway still held its answer"


def test_a_slow_shared_gateway_holds_only_its_attempt(slow: _SlowGateway, tmp_path: Path) -> None:
    gateway = RemoteRunGateway(slow.url, ADMIN_TOKEN)
    wiring = ClaudeCodeAdapter.gateway_wiring

    async def main() -> None:
        with use_gateway(gateway):
            opening = asyncio.create_task(
                aopen_run(wiring, _request(tmp_path), operation_id="op", attempt_id="op/1")
            )
            await _runs_while_held(slow.opening, opening)
            slow.release_open.set()
            opened = await asyncio.wait_for(opening, HOLD_S)
            assert opened is not None
            assert opened.token == RUN_TOKEN
            assert opened.request.env["ANTHROPIC_API_KEY"] == RUN_TOKEN
            assert opened.request.config["base_url"] == slow.url
            closing = asyncio.create_task(opened.aclose())
            await _runs_while_held(slow.closing, closing)
            slow.release_close.set()
            counts = await asyncio.wait_for(closing, HOLD_S)
            assert counts is not None
            assert (counts.requests, counts.input_tokens, counts.output_tokens) == (4, 40, 7)
            assert await opened.aclose() is counts  # closed once
            assert opened.close() is counts

    asyncio.run(main())
    assert slow.deleted == [RUN_TOKEN]
    ((run,),) = [slow.opened]
    assert (run["key"], run["task"], run["attempt"]) == (CANARY_KEY, "op", "op/1")


def test_a_refusal_reads_as_the_synchronous_call_reads_it(
    slow: _SlowGateway, tmp_path: Path
) -> None:
    gateway = RemoteRunGateway(slow.url, ADMIN_TOKEN, where="--gateway")
    slow.status = 401
    slow.release_open.set()
    wiring = ClaudeCodeAdapter.gateway_wiring
    with use_gateway(gateway), pytest.raises(ConfigError) as sync:
        open_run(wiring, _request(tmp_path), operation_id="op", attempt_id="op/1")

    async def main() -> None:
        with use_gateway(gateway):
            await aopen_run(wiring, _request(tmp_path), operation_id="op", attempt_id="op/2")

    with pytest.raises(ConfigError) as off_loop:
        asyncio.run(main())
    assert str(off_loop.value) == str(sync.value)
    assert off_loop.value.where == "--gateway"
    assert "answered 401" in str(off_loop.value)
    assert CANARY_KEY not in str(off_loop.value)


def test_an_attempt_cancelled_while_its_run_opens_closes_the_run(
    slow: _SlowGateway, tmp_path: Path
) -> None:
    gateway = RemoteRunGateway(slow.url, ADMIN_TOKEN)
    slow.release_close.set()
    wiring = ClaudeCodeAdapter.gateway_wiring

    async def main() -> None:
        with use_gateway(gateway):
            opening = asyncio.create_task(
                aopen_run(wiring, _request(tmp_path), operation_id="op", attempt_id="op/1")
            )
            await _until(slow.opening)
            opening.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await opening
            assert opening.cancelled()
            slow.release_open.set()  # the gateway answers after the attempt is gone
            await _until(slow.closing)

    asyncio.run(main())
    assert slow.deleted == [RUN_TOKEN]


def test_a_gateway_whose_calls_do_not_block_is_called_on_the_loop(tmp_path: Path) -> None:
    class _InMemory:
        url = "http://127.0.0.1:1"
        deadline_s = 30.0

        def __init__(self) -> None:
            self.threads: list[str] = []

        def open_run(self, **run: Any) -> str:
            self.threads.append(threading.current_thread().name)
            return RUN_TOKEN

        def close_run(self, token: str) -> None:
            self.threads.append(threading.current_thread().name)

    gateway = _InMemory()

    async def main() -> None:
        with use_gateway(gateway):
            opened = await aopen_run(
                ClaudeCodeAdapter.gateway_wiring,
                _request(tmp_path),
                operation_id="op",
                attempt_id="op/1",
            )
            assert opened is not None
            assert await opened.aclose() is None

    asyncio.run(main())
    assert gateway.threads == [threading.main_thread().name] * 2
