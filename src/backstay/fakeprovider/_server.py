"""The aiohttp application: routes, and the one request path every API goes through.

Per generation request: parse the body into a ``Prompt`` → replay a remembered answer for
its ``Idempotency-Key`` → pick a fault → enforce the rate limit → render the answer →
record it → send it, acting out the fault (hold, stall, cut, reset) on the way out.
Everything is decided before the first byte is written.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import socket
import struct
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Final

from aiohttp import web

from backstay.fakeprovider import _prompt
from backstay.fakeprovider._answer import answer as _answer
from backstay.fakeprovider._apis import ANTHROPIC, GEMINI, OPENAI_CHAT, OPENAI_RESPONSES, Api
from backstay.fakeprovider._limits import Limiter, fault_headers
from backstay.fakeprovider._replay import KeyReused, Replays
from backstay.fakeprovider._select import FaultPicker
from backstay.fakeprovider.faults import Fault, FaultKind
from backstay.fakeprovider.scenario import Scenario
from backstay.fakeprovider.stats import Entry, Recorder
from backstay.fakeprovider.wire import anthropic as _anthropic
from backstay.fakeprovider.wire import gemini as _gemini
from backstay.fakeprovider.wire import openai_errors as _openai_errors
from backstay.fakeprovider.wire.base import SSE_TYPE, ErrorContext, Reply

STATS_PATH: Final = "/_backstay/stats"
DEFAULT_MODELS: Final = (
    "claude-sonnet-4-6",
    "claude-haiku-4-5",
    "gpt-5",
    "gpt-5-mini",
    "gemini-2.5-flash",
    "gemini-2.5-pro",
)
# A hang or stall ends when the server stops, or after this long at the latest.
MAX_HOLD_S: Final = 3600.0
_LOG_FLUSH_S: Final = 0.5
_FAULT_RATE_LIMIT: Final = 50  # the limit an injected 429 reports when none is enforced
_ENFORCED: Final = "rate_limit_enforced"
_NO_RESPONSE: Final = 0
_SENT_BY_HAND: Final = frozenset({FaultKind.STALL, FaultKind.RESET, FaultKind.STREAM_ERROR})
_NOT_ERRORS: Final = frozenset({FaultKind.HANG, FaultKind.SLOW, *_SENT_BY_HAND})


def _reset(request: web.BaseRequest) -> None:
    """Close the connection with a TCP RST (SO_LINGER 0), as a crashed peer would."""
    transport = request.transport
    if transport is None:
        return
    sock = transport.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()


class FakeServer:
    """The state of one running fake provider. Everything runs on one event loop, except
    ``recorder.snapshot()``, which any thread may call."""

    def __init__(self, scenario: Scenario, *, log_path: Path | None) -> None:
        self.scenario = scenario
        self.recorder = Recorder(log_path)
        self._logging = log_path is not None
        now = time.monotonic()
        self._picker = FaultPicker(scenario.faults, seed=scenario.seed, started=now)
        limit = scenario.rate_limit
        self._limiter = Limiter(limit, now=now) if limit is not None else None
        self._replays = Replays()
        self._number = 0
        self._stopping: asyncio.Event | None = None
        self._flusher: asyncio.Task[None] | None = None

    # ---- lifetime -------------------------------------------------------------------

    def application(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        route = app.router
        route.add_post("/v1/messages", self._post(ANTHROPIC))
        route.add_post("/v1/messages/count_tokens", self._anthropic_count)
        route.add_post("/v1/chat/completions", self._post(OPENAI_CHAT))
        route.add_post("/v1/responses", self._post(OPENAI_RESPONSES))
        route.add_get("/v1/models", self._models)
        route.add_post("/v1beta/models/{name}", self._gemini)
        route.add_post("/v1/models/{name}", self._gemini)
        route.add_get("/v1beta/models", self._gemini_models)
        route.add_get(STATS_PATH, self._stats)
        return app

    def started(self) -> None:
        """Call on the serving loop once it runs."""
        self._stopping = asyncio.Event()
        if self._logging:
            self._flusher = asyncio.get_running_loop().create_task(self._flush_log())

    async def stopping(self) -> None:
        """Release every held request (hangs, stalls, slow answers) and stop logging."""
        if self._stopping is not None:
            self._stopping.set()
        if self._flusher is not None:
            self._flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._flusher

    async def _flush_log(self) -> None:
        while True:
            await asyncio.sleep(_LOG_FLUSH_S)
            self.recorder.flush()

    async def _hold(self, seconds: float) -> bool:
        """Wait ``seconds`` or until the server stops; ``True`` if it is stopping."""
        if self._stopping is None:
            await asyncio.sleep(seconds)
            return False
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), seconds)
        return self._stopping.is_set()

    # ---- small endpoints ------------------------------------------------------------

    async def _stats(self, _request: web.Request) -> web.StreamResponse:
        return web.json_response(self.recorder.snapshot().to_dict())

    async def _models(self, request: web.Request) -> web.StreamResponse:
        if "anthropic-version" in request.headers:
            api, reply = ANTHROPIC.name, _anthropic.models(DEFAULT_MODELS)
        elif "x-goog-api-key" in request.headers or "key" in request.query:
            return await self._gemini_models(request)
        else:
            api, reply = OPENAI_CHAT.name, _openai_errors.models(DEFAULT_MODELS)
        self._record(request, api, None, stream=False, key=None, fault=None, status=200)
        return self._json(reply)

    async def _gemini_models(self, request: web.Request) -> web.StreamResponse:
        self._record(request, GEMINI.name, None, stream=False, key=None, fault=None, status=200)
        return self._json(_gemini.models(DEFAULT_MODELS))

    async def _anthropic_count(self, request: web.Request) -> web.StreamResponse:
        try:
            body = json.loads(await request.read())
            prompt = _prompt.anthropic({"max_tokens": 1, **body})
        except (ValueError, TypeError, _prompt.BadRequest) as err:
            reply = _anthropic.bad_request(str(err), "req_count")
        else:
            reply = _anthropic.count_tokens(prompt.input_tokens, "req_count")
        self._record(
            request, ANTHROPIC.name, None, stream=False, key=None, fault=None, status=reply.status
        )
        return self._json(reply)

    async def _gemini(self, request: web.Request) -> web.StreamResponse:
        model, _, action = request.match_info["name"].rpartition(":")
        if action == "countTokens":
            try:
                prompt = _prompt.gemini(json.loads(await request.read()), model=model, stream=False)
            except (ValueError, TypeError, _prompt.BadRequest) as err:
                reply = _gemini.bad_request(str(err))
            else:
                reply = _gemini.count_tokens(prompt.input_tokens)
            self._record(
                request, GEMINI.name, model, stream=False, key=None, fault=None, status=reply.status
            )
            return self._json(reply)
        if action not in {"generateContent", "streamGenerateContent"} or not model:
            reply = _gemini.bad_request(f"unknown method {request.match_info['name']!r}")
            self._record(
                request, GEMINI.name, model or None, stream=False, key=None, fault=None, status=404
            )
            return self._json(Reply(status=404, headers={}, body=reply.body))
        return await self._generate(
            request, GEMINI, model=model, stream=action == "streamGenerateContent"
        )

    # ---- the generation path --------------------------------------------------------

    def _post(self, api: Api) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
        async def handler(request: web.Request) -> web.StreamResponse:
            return await self._generate(request, api)

        return handler

    async def _generate(
        self, request: web.Request, api: Api, *, model: str = "", stream: bool = False
    ) -> web.StreamResponse:
        self._number += 1
        number = self._number
        request_id = f"req_{number:024x}"
        body = await request.read()
        try:
            prompt = api.parse(_prompt.json_object(body), model, stream)
        except (ValueError, _prompt.BadRequest) as err:
            self._record(
                request, api.name, model or None, stream=stream, key=None, fault=None, status=400
            )
            return self._json(api.bad_request(str(err), request_id))
        header = request.headers.get("Idempotency-Key")
        key = (request.path, header) if header else None
        if key is not None:
            try:
                stored = await self._replays.claim(key, hashlib.sha256(body).hexdigest())
            except KeyReused:
                self._record(
                    request,
                    api.name,
                    prompt.model,
                    stream=stream,
                    key=header,
                    fault=None,
                    status=400,
                )
                message = (
                    "Idempotency-Key was already used with a different request body; "
                    "a key names one request"
                )
                return self._json(api.bad_request(message, request_id))
            if stored is not None:
                self._record(
                    request,
                    api.name,
                    prompt.model,
                    stream=prompt.stream,
                    key=header,
                    fault=None,
                    status=stored.status,
                    replay=True,
                )
                return await self._send(request, api, stored, None)
        keep: Reply | None = None
        session = self.scenario.session
        turn = None if session is None else session.turn_of(prompt.tools, prompt.tool_results)
        try:
            now = time.monotonic()
            fault = self._picker.pick(
                api.name, prompt.model, stream=prompt.stream, now=now, turn=turn
            )
            reply, label, tokens = self._plan(
                api,
                prompt=prompt,
                fault=fault,
                number=number,
                request_id=request_id,
                now=now,
                turn=turn,
            )
            status = _NO_RESPONSE if reply is None else reply.status
            self._record(
                request,
                api.name,
                prompt.model,
                stream=prompt.stream,
                key=header,
                fault=label,
                status=status,
                tokens=tokens,
                turn=turn,
            )
            if fault is None or fault.kind is FaultKind.SLOW:
                keep = reply
        finally:
            if key is not None:
                self._replays.release(key, keep)
        return await self._send(request, api, reply, fault)

    def _plan(
        self,
        api: Api,
        *,
        prompt: _prompt.Prompt,
        fault: Fault | None,
        number: int,
        request_id: str,
        now: float,
        turn: int | None,
    ) -> tuple[Reply | None, str | None, tuple[int, int]]:
        """The answer (``None``: no response at all), the fault's label, and the tokens
        worked on (input, output)."""
        label = None if fault is None else str(fault.kind)
        kind = None if fault is None else fault.kind
        if kind is FaultKind.HANG or (
            kind is FaultKind.RESET and fault and fault.events_before == 0
        ):
            return None, label, (0, 0)
        blocked = kind is FaultKind.CONTENT_POLICY and api.blocked is not None
        if fault is not None and kind not in _NOT_ERRORS and not blocked:
            return self._fault_reply(api, prompt, fault, request_id), label, (0, 0)
        result = _answer(
            prompt, self.scenario.reply, number=number, session=self.scenario.session, turn=turn
        )
        extra: dict[str, str] = {}
        if self._limiter is not None:
            denied = self._limiter.admit(result.input_tokens + result.output_tokens, now=now)
            extra = self._limiter.headers(api.name, now=now, wall=time.time())
            if denied is not None:
                ctx = ErrorContext(
                    model=prompt.model,
                    request_id=request_id,
                    input_tokens=prompt.input_tokens,
                    retry_after_s=denied.retry_after_s,
                    dimension=denied.dimension,
                    limit=denied.limit,
                    requested=denied.requested,
                    too_large=denied.too_large,
                )
                reply = api.error(FaultKind.RATE_LIMIT, ctx)
                return _with_headers(reply, extra), _ENFORCED, (0, 0)
        if blocked and api.blocked is not None:
            reply = api.blocked(result, prompt)
            return _with_headers(reply, extra), label, (result.input_tokens, 0)
        reply = api.answer(result, prompt, request_id)
        return _with_headers(reply, extra), label, (result.input_tokens, result.output_tokens)

    def _fault_reply(
        self, api: Api, prompt: _prompt.Prompt, fault: Fault, request_id: str
    ) -> Reply:
        retry_after = fault.retry_after
        limit = _FAULT_RATE_LIMIT
        rate = self.scenario.rate_limit
        if rate is not None and rate.requests_per_minute is not None:
            limit = rate.requests_per_minute
        ctx = ErrorContext(
            model=prompt.model,
            request_id=request_id,
            input_tokens=prompt.input_tokens,
            retry_after_s=retry_after,
            limit=limit,
        )
        reply = api.error(fault.kind, ctx)
        if fault.kind is FaultKind.RATE_LIMIT and retry_after is not None:
            extra = fault_headers(
                api.name, limit=limit, retry_after_s=retry_after, wall=time.time()
            )
            reply = _with_headers(reply, extra)
        return reply

    # ---- sending ----------------------------------------------------------------------

    async def _send(
        self, request: web.Request, api: Api, reply: Reply | None, fault: Fault | None
    ) -> web.StreamResponse:
        kind = None if fault is None else fault.kind
        if reply is None:  # hang, or reset before the headers
            if kind is FaultKind.HANG:
                await self._hold(MAX_HOLD_S)
            _reset(request)
            return web.Response(status=500)
        if kind is FaultKind.SLOW and fault is not None and await self._hold(fault.delay):
            _reset(request)
            return web.Response(status=500)
        if fault is None or kind not in _SENT_BY_HAND:
            if reply.streamed:
                return await self._stream(request, api, reply, None)
            return self._json(reply)
        if reply.streamed:
            return await self._stream(request, api, reply, fault)
        return await self._cut_body(request, reply, fault)

    def _json(self, reply: Reply) -> web.StreamResponse:
        return web.Response(
            body=reply.body,
            status=reply.status,
            headers=reply.headers,
            content_type=reply.content_type,
        )

    async def _stream(
        self, request: web.Request, api: Api, reply: Reply, fault: Fault | None
    ) -> web.StreamResponse:
        response = web.StreamResponse(status=reply.status, headers=reply.headers)
        response.content_type = SSE_TYPE
        response.headers["cache-control"] = "no-cache"
        events = reply.events or ()
        stop_at = len(events) if fault is None else min(fault.events_before, len(events))
        try:
            await response.prepare(request)
            for event in events[:stop_at]:
                await response.write(event)
            if fault is None:
                await response.write_eof()
                return response
            if fault.kind is FaultKind.STREAM_ERROR:
                await response.write(api.stream_error(stop_at))
                await response.write_eof()
                return response
            if fault.kind is FaultKind.STALL:
                await self._hold(MAX_HOLD_S)
            _reset(request)
        except ConnectionError:
            pass  # the client went away: nothing left to send
        return response

    async def _cut_body(
        self, request: web.Request, reply: Reply, fault: Fault
    ) -> web.StreamResponse:
        """A JSON answer whose body stops half-way: then silence (stall) or a reset."""
        response = web.StreamResponse(status=reply.status, headers=reply.headers)
        response.content_type = reply.content_type
        response.content_length = len(reply.body)
        try:
            await response.prepare(request)
            await response.write(reply.body[: len(reply.body) // 2])
            if fault.kind is FaultKind.STALL:
                await self._hold(MAX_HOLD_S)
            _reset(request)
        except ConnectionError:
            pass
        return response

    def _record(
        self,
        request: web.BaseRequest,
        api: str | None,
        model: str | None,
        *,
        stream: bool,
        key: str | None,
        fault: str | None,
        status: int,
        tokens: tuple[int, int] = (0, 0),
        replay: bool = False,
        turn: int | None = None,
    ) -> None:
        self.recorder.record(
            Entry(
                time=time.time(),
                path=request.path,
                api=api,
                model=model,
                stream=stream,
                idempotency_key=key,
                fault=fault,
                status=status,
                input_tokens=tokens[0],
                output_tokens=tokens[1],
                replay=replay,
                traceparent=request.headers.get("traceparent"),
                turn=turn,
            )
        )


def _with_headers(reply: Reply, extra: dict[str, str]) -> Reply:
    if not extra:
        return reply
    return Reply(
        status=reply.status,
        headers={**extra, **reply.headers},
        body=reply.body,
        events=reply.events,
        content_type=reply.content_type,
    )
