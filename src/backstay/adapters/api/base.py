"""``ApiAdapter``: what the Anthropic, OpenAI and Gemini API adapters share.

A provider module writes only how to build its SDK client and how to ask for one reply
(streamed or not); this base does the rest, once:

* settings (``api.settings``), the SDK imported on first use (a missing one is a
  ``ConfigError`` naming ``pip install 'backstay[<extra>]'``), key and base URL from the
  request's environment, the key registered for redaction before anything runs;
* the whole attempt under the request's deadline (``ERR_TIMEOUT``) and each gap in a
  stream under its stall limit (``ERR_STREAM_STALLED``);
* the transcript: the system prompt and prompt in ``agent.log``, the reply in
  ``stdout.log`` as it arrives and, line by line, in ``agent.log``;
* every failure classified with ``backstay.classify`` for the provider, errors inside a
  stream included; a success that hides a failure (a refusal, a content filter) checked
  with ``check_response``;
* a stream that breaks after it delivered output: the ``Failure`` says so (message and
  ``details.stream_interrupted`` / ``partial_output_chars`` / ``partial_output_tail``) and
  the text is the attempt's partial output (``AdapterError.partial_output``), kept in
  ``stdout.log``. Whether to retry stays the policy's decision, from the code: a plain
  completion has no side effect, so replaying it regenerates the answer, and nothing
  already delivered is lost;
* usage (tokens, one API call) and its cost (``backstay.adapters.pricing``).

SDKs retry nothing themselves (``max_retries=0``), and every attempt of an operation
sends ``Idempotency-Key: <operation_id>``.
"""

from __future__ import annotations

import abc
import asyncio
import dataclasses
import importlib
import importlib.machinery
import importlib.util
import sys
import time
from collections.abc import AsyncIterator, Mapping
from types import ModuleType
from typing import Any, ClassVar, Final, TypeVar

from backstay.adapters.api import _sdk_gc
from backstay.adapters.api._clients import attempt_capture
from backstay.adapters.api.settings import (
    COMMON_KEYS,
    ApiSettings,
    parse_settings,
    resolve_api_key,
    resolve_base_url,
)
from backstay.adapters.base import BaseAdapter
from backstay.adapters.capture import Capture, Stream
from backstay.adapters.contract import AgentRequest, AgentResult, AgentStatus
from backstay.adapters.pricing import price_usage
from backstay.adapters.usage import Usage
from backstay.classify import check_response, classify
from backstay.errors import ConfigError
from backstay.events.tracecontext import trace_headers
from backstay.failure import Failure
from backstay.redact import register_secret

__all__ = [
    "IDEMPOTENCY_HEADER",
    "ApiAdapter",
    "ApiCall",
    "Reply",
    "ReplyFailed",
    "Transcript",
    "cut_short",
    "import_sdk",
    "require_sdk",
]

IDEMPOTENCY_HEADER: Final = "Idempotency-Key"
# How much of a broken stream's output its Failure quotes (all of it is the partial output).
PARTIAL_TAIL_CHARS: Final = 500

T = TypeVar("T")


def import_sdk(module: str, *, adapter: str, extra: str) -> ModuleType:
    """``module`` imported now (the collector paused while a command run freezes what
    lives for it: ``_sdk_gc``); ``ConfigError`` naming the extra that installs it."""
    try:
        return _sdk_gc.imported(module)
    except ImportError as exc:
        raise ConfigError(
            f"adapter {adapter!r} needs the {module.partition('.')[0]!r} package, which is "
            f"not installed: pip install 'backstay[{extra}]'",
            where="adapter",
        ) from exc


def require_sdk(module: str, *, adapter: str, extra: str) -> None:
    """``ConfigError`` naming the extra that installs ``module`` when it is not installed;
    ``module`` itself is found, not imported (checking settings costs no SDK import)."""
    if not _installed(module):
        import_sdk(module, adapter=adapter, extra=extra)


def _installed(module: str) -> bool:
    """Whether ``module`` can be imported, found part by part without importing even its
    parent packages (``google`` for ``google.genai``)."""
    if module in sys.modules:
        return sys.modules[module] is not None  # None: its import is blocked
    first, *rest = module.split(".")
    try:
        spec = importlib.util.find_spec(first)
    except (ImportError, ValueError):
        return False
    for part in rest:
        if spec is None or spec.submodule_search_locations is None:
            return False
        spec = importlib.machinery.PathFinder.find_spec(part, list(spec.submodule_search_locations))
    return spec is not None


class Transcript:
    """The reply as it arrives: raw in ``stdout.log``, line by line in ``agent.log``."""

    def __init__(self, capture: Capture) -> None:
        self._capture = capture
        self._parts: list[str] = []
        self._line = ""

    def note(self, role: str, text: str) -> None:
        """A whole message (system prompt, prompt) in ``agent.log``."""
        for line in text.splitlines() or [""]:
            self._capture.log(f"{role} | {line}")

    def delta(self, text: str) -> None:
        """A piece of the reply."""
        if not text:
            return
        self._parts.append(text)
        self._capture.write(Stream.STDOUT, text)
        *done, self._line = (self._line + text).split("\n")
        for line in done:
            self._capture.log(f"assistant | {line}")

    def finish(self) -> None:
        """Log the last line still waiting for its newline."""
        if self._line:
            self._capture.log(f"assistant | {self._line}")
            self._line = ""

    @property
    def text(self) -> str:
        return "".join(self._parts)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    """What one call returned. ``body`` is the reply in the provider's wire shape (for
    ``check_response``: stop and finish reasons, block reasons); ``text`` may be empty
    when the reply was streamed (the transcript has it)."""

    usage: Usage
    body: Mapping[str, Any] | None = None
    text: str | None = None
    stop: str | None = None


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ApiCall:
    """Everything a provider module needs to make one call."""

    request: AgentRequest
    settings: ApiSettings
    sdk: ModuleType
    api_key: str
    key_variable: str
    base_url: str
    headers: Mapping[str, str]
    prompt: str
    system: str | None
    transcript: Transcript
    stall_s: float | None
    capture: Capture

    async def paced(self, items: AsyncIterator[T]) -> AsyncIterator[T]:
        """``items``, failing with ``_Stalled`` when one takes longer than the stall limit."""
        while True:
            try:
                if self.stall_s is None:
                    item = await anext(items)
                else:
                    async with asyncio.timeout(self.stall_s):
                        item = await anext(items)
            except StopAsyncIteration:
                return
            except TimeoutError:
                raise _Stalled(self.stall_s or 0.0) from None
            yield item


class ReplyFailed(Exception):
    """A provider module's way to fail a call with a ``Failure`` it read from the reply
    (an error event the SDK yields instead of raising); ``classify`` returns it as it is."""

    def __init__(self, failure: Failure) -> None:
        self.failure = failure
        super().__init__(str(failure))


def cut_short(provider: str) -> ReplyFailed:
    """A stream that ended cleanly but before the reply did (no stop or finish reason)."""
    return ReplyFailed(
        Failure(
            code="ERR_CONNECTION_CLOSED",
            message="the stream ended before the reply did (no stop or finish reason)",
            provider=provider,
            details={"source": "stream_end"},
        )
    )


class _Stalled(Exception):
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        super().__init__(f"the stream sent nothing for {seconds:g} s")


class ApiAdapter(BaseAdapter):
    """The shared attempt of the API adapters; see the module docstring. Subclasses set
    the class variables and write ``call``."""

    provider: ClassVar[str] = ""  # the name backstay.classify knows the provider by
    price_provider: ClassVar[str] = ""  # the provider id of the price source
    sdk_module: ClassVar[str] = ""
    extra: ClassVar[str] = ""
    # Passed when nothing else names a base URL, so that no SDK reads the process environment.
    default_base_url: ClassVar[str] = ""
    default_max_tokens: ClassVar[int | None] = None
    config_keys: ClassVar[frozenset[str]] = COMMON_KEYS
    task_limits: ClassVar[Mapping[str, str]] = {"max_output_tokens": "max_tokens"}

    def settings(self, config: Mapping[str, Any]) -> ApiSettings:
        return parse_settings(self.name, config, default_max_tokens=self.default_max_tokens)

    def validate_config(self, config: Mapping[str, Any]) -> bool:
        """Unknown keys and wrong values name the adapter and the key; a missing SDK
        names the extra to install (the SDK is found, not imported: that waits for the
        first attempt)."""
        super().validate_config(config)
        self.settings(config)
        require_sdk(self.sdk_module, adapter=self.name, extra=self.extra)
        return True

    @abc.abstractmethod
    async def call(self, call: ApiCall) -> Reply:
        """Make one call, feeding the reply's text to ``call.transcript`` as it arrives."""

    def _failure(self, code: str, message: str, **details: Any) -> Failure:
        return Failure(code=code, message=message, provider=self.provider, details=details)

    async def execute(
        self, request: AgentRequest, *, operation_id: str, attempt_id: str, capture: Capture
    ) -> AgentResult:
        settings = self.settings(request.config)
        sdk = import_sdk(self.sdk_module, adapter=self.name, extra=self.extra)
        declared = self.provider_env
        key, source = resolve_api_key(settings, request.env, declared.credentials)
        if key is None:
            failure = self._failure("ERR_AUTH_MISSING_CREDENTIALS", source)
            return AgentResult.failed(failure)
        register_secret(key)
        base_url = (
            resolve_base_url(settings, request.env, declared.endpoint[0]) or self.default_base_url
        )
        prompt = request.read_prompt()
        system = request.tier.system_prompt if request.tier is not None else None
        transcript = Transcript(capture)
        mode = "streaming" if settings.stream else "one response"
        capture.log(
            f"{self.name}: model {request.model}, {mode}, key from {source}, "
            f"base URL {base_url}, {IDEMPOTENCY_HEADER} {operation_id}"
        )
        if system:
            transcript.note("system", system)
        transcript.note("user", prompt)
        call = ApiCall(
            request=request,
            settings=settings,
            sdk=sdk,
            api_key=key,
            key_variable=source,
            base_url=base_url,
            headers={IDEMPOTENCY_HEADER: operation_id, **trace_headers()},
            prompt=prompt,
            system=system,
            transcript=transcript,
            stall_s=request.stall_timeout_s,
            capture=capture,
        )
        started = time.monotonic()
        recording = attempt_capture.set(capture)  # for a pooled client's response hook
        try:
            async with asyncio.timeout(request.timeout_s):
                reply = await self.call(call)
        except TimeoutError:
            failure = self._failure(
                "ERR_TIMEOUT",
                f"{self.name} got no complete reply within its {request.timeout_s:g} s deadline",
                source="deadline",
            )
            return self._broken(failure, transcript, capture, started)
        except _Stalled as stall:
            failure = self._failure("ERR_STREAM_STALLED", str(stall), source="stall")
            return self._broken(failure, transcript, capture, started)
        except ConfigError:
            raise
        except Exception as exc:  # noqa: BLE001 - every SDK error is classified here
            return self._broken(classify(exc, provider=self.provider), transcript, capture, started)
        finally:
            attempt_capture.reset(recording)
        transcript.finish()
        text = transcript.text if reply.text is None else reply.text
        usage = self._priced(reply.usage, request.model, settings, capture)
        duration = time.monotonic() - started
        capture.log(
            f"reply: {len(text)} characters, stop {reply.stop or 'unknown'}, "
            f"{usage.prompt_tokens} prompt + {usage.output_tokens} output tokens "
            f"({usage.cache_read_tokens} cache read, {usage.cache_write_tokens} cache write)"
        )
        hidden = None if reply.body is None else check_response(200, None, reply.body)
        if hidden is not None:
            failure = dataclasses.replace(hidden, provider=self.provider)
            return AgentResult.failed(failure, output=text, usage=usage, duration_s=duration)
        return AgentResult(
            status=AgentStatus.SUCCEEDED, output=text, usage=usage, duration_s=duration
        )

    def _priced(self, usage: Usage, model: str, settings: ApiSettings, capture: Capture) -> Usage:
        cost = price_usage(usage, model=model, provider=self.price_provider, prices=settings.prices)
        shown = "unknown" if cost.usd is None else f"{cost.usd:.6f} USD"
        capture.log(f"cost: {shown} ({cost.source})")
        return dataclasses.replace(usage, cost_usd=cost.usd)

    def _broken(
        self, failure: Failure, transcript: Transcript, capture: Capture, started: float
    ) -> AgentResult:
        """The result of a call that failed; with the output it had delivered, if any."""
        transcript.finish()
        partial = transcript.text
        if partial:
            failure = dataclasses.replace(
                failure,
                message=f"the stream broke after delivering {len(partial)} characters "
                f"(kept as the partial output and in stdout.log): {failure.message}",
                details={
                    **failure.details,
                    "stream_interrupted": True,
                    "partial_output_chars": len(partial),
                    "partial_output_tail": partial[-PARTIAL_TAIL_CHARS:],
                },
            )
            capture.log(f"stream broke after {len(partial)} characters of output")
        return AgentResult.failed(
            failure,
            output=partial,
            usage=Usage(api_calls=1),
            duration_s=time.monotonic() - started,
        )
