"""Running the API adapters against the test API server: scenario routing and requests.

The scenario is the first segment of the base URL's path (``/<scenario>/v1/messages``);
attempts are counted per ``Idempotency-Key``, so "attempt 1 fails, attempt 2 succeeds"
follows the operation, as a provider that dedupes by key would see it.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from tests.adapters.api_server import ApiServer, Canned, Recorded
from tests.adapters.api_wire import (
    AnthropicWire,
    GeminiWire,
    OpenAIChatWire,
    OpenAIResponsesWire,
    Wire,
)
from tests.adapters.support import CANARY_KEY

from backstay.adapters.capture import Capture
from backstay.adapters.contract import AgentRequest, AgentResult, TierConfig
from backstay.errors import AdapterError
from backstay.testing.contract import RETRY_AFTER_S

PARTS: Final = ("Hello", ", wor", "ld.\nSecond", " line")
TEXT: Final = "".join(PARTS)

# adapter name → (key variable, base URL suffix after the scenario segment)
PROVIDERS: Final[Mapping[str, tuple[str, str]]] = {
    "anthropic-api": ("ANTHROPIC_API_KEY", ""),
    "openai-api": ("OPENAI_API_KEY", "/v1"),
    "gemini-api": ("GEMINI_API_KEY", "/"),
}


def wire_for(adapter: str, *, api: str = "chat", stream: bool = True) -> Wire:
    if adapter == "anthropic-api":
        return AnthropicWire(stream=stream)
    if adapter == "gemini-api":
        return GeminiWire(stream=stream)
    if api == "responses":
        return OpenAIResponsesWire(stream=stream)
    return OpenAIChatWire(stream=stream)


class Router:
    """Answers by scenario (the path's first segment) and attempt number (per key)."""

    def __init__(self, wire: Wire) -> None:
        self.wire = wire
        self._lock = threading.Lock()
        self.attempts: collections.Counter[str] = collections.Counter()

    def __call__(self, request: Recorded) -> Canned:
        scenario = request.path.lstrip("/").split("/", 1)[0]
        key = request.headers.get("idempotency-key", "")
        with self._lock:
            self.attempts[key] += 1
            number = self.attempts[key]
        wire = self.wire
        success = wire.reply(PARTS, stream=wire.stream)
        if scenario == "success":
            return success
        if scenario == "network_error":
            return Canned(drop=True) if number <= 2 else success
        if scenario == "rate_limit_with_wait":
            return wire.rate_limited(RETRY_AFTER_S) if number == 1 else success
        if scenario == "context_overflow":
            return wire.context_overflow()
        if scenario == "content_policy":
            return wire.content_policy()
        if scenario == "quota_exhausted":
            return wire.quota()
        if scenario == "hang":
            return Canned(hang=True)
        if scenario == "stream_error":
            return wire.stream_error(PARTS[:2]) if number == 1 else success
        if scenario == "cut":
            return wire.cut(PARTS[:2]) if number == 1 else success
        if scenario == "stall":
            return dataclasses.replace(success, stall_after=3)
        if scenario == "echo_key":
            return Canned(status=401, body=_echo(request))
        if scenario == "overloaded":
            return wire.overloaded() if number == 1 else success
        return Canned(status=404, body={"error": {"message": f"no scenario {scenario!r}"}})


def _echo(request: Recorded) -> dict[str, Any]:
    """A 401 whose message quotes every header the client sent, its key among them."""
    sent = "; ".join(f"{k}={v}" for k, v in request.headers.items())
    message = f"invalid credentials: {sent}"
    return {
        "type": "error",
        "error": {"type": "authentication_error", "message": message, "code": 401},
    }


def base_url(server: ApiServer, adapter: str, scenario: str) -> str:
    return f"{server.url}/{scenario}{PROVIDERS[adapter][1]}"


def key_env(adapter: str) -> dict[str, str]:
    return {PROVIDERS[adapter][0]: CANARY_KEY}


def dispatch(
    adapter: Any,
    tmp_path: Path,
    *,
    config: Mapping[str, Any],
    env: Mapping[str, str],
    operation_id: str = "op-1",
    model: str = "contract-model",
    attempt: int = 1,
    system: str | None = None,
    timeout_s: float = 30.0,
    stall_timeout_s: float | None = None,
) -> tuple[AgentResult | AdapterError, Path]:
    """One attempt, dispatched directly; its result or error, and its output directory."""
    out = tmp_path / f"attempt_{attempt}"
    request = AgentRequest(
        model=model,
        workspace=tmp_path,
        output_dir=out,
        timeout_s=timeout_s,
        prompt="Say hello.",
        env=env,
        config=config,
        tier=None if system is None else TierConfig(tier_id="t", system_prompt=system),
        stall_timeout_s=stall_timeout_s,
    )

    async def go() -> AgentResult | AdapterError:
        with Capture(out) as capture:
            try:
                return await adapter.dispatch(
                    request,
                    operation_id=operation_id,
                    attempt_id=f"{operation_id}/{attempt}",
                    capture=capture,
                )
            except AdapterError as err:
                return err

    return asyncio.run(go()), out
