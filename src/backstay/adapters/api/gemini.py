"""``GeminiApiAdapter`` (``gemini-api``): one ``generateContent`` call per attempt to the
Gemini API, through the official ``google-genai`` SDK (``pip install 'backstay[gemini]'``).

The prompt is the contents, the tier's system prompt the ``system_instruction``. The key
comes from ``GEMINI_API_KEY`` or ``GOOGLE_API_KEY`` (in that order) and is always passed
explicitly, with ``vertexai=False``, so the SDK reads nothing from the process
environment; ``GOOGLE_GEMINI_BASE_URL`` names another base URL. The SDK's retries stay
off (no ``retry_options``: one attempt), and so are aiohttp's: the SDK is given a plain
httpx transport. Streaming uses ``generate_content_stream``; a
success that hides a block (``promptFeedback.blockReason``, a ``SAFETY`` finish) is a
content-policy failure. Usage: ``prompt_token_count`` includes ``cached_content_token_count``
(subtracted into ``cache_read_tokens``); thinking tokens count as output. Settings and the
rest of the attempt: ``backstay.adapters.api.base``.
"""

from __future__ import annotations

from typing import Any, ClassVar, Final

from backstay.adapters.api._clients import attempt_client, record_rate_limits
from backstay.adapters.api._tls import http_library, shared_ssl_context
from backstay.adapters.api.base import ApiAdapter, ApiCall, Reply, cut_short
from backstay.adapters.provider_env import GEMINI_ENV, ProviderEnv
from backstay.adapters.usage import Usage

__all__ = ["GeminiApiAdapter"]

_MS: Final = 1000


def _count(meta: Any, name: str) -> int:
    value = getattr(meta, name, None)
    return value if isinstance(value, int) else 0


def _usage(meta: Any) -> Usage:
    cached = _count(meta, "cached_content_token_count")
    return Usage(
        input_tokens=max(0, _count(meta, "prompt_token_count") - cached),
        output_tokens=_count(meta, "candidates_token_count") + _count(meta, "thoughts_token_count"),
        cache_read_tokens=cached,
        api_calls=1,
    )


def _text(response: Any) -> str:
    """The answer's text in ``response`` (a whole reply or one chunk), thoughts left out."""
    candidates = getattr(response, "candidates", None) or []
    if not candidates:
        return ""
    content = getattr(candidates[0], "content", None)
    parts = getattr(content, "parts", None) or []
    return "".join(part.text for part in parts if part.text and not getattr(part, "thought", None))


def _finish(response: Any) -> str | None:
    candidates = getattr(response, "candidates", None) or []
    reason = getattr(candidates[0], "finish_reason", None) if candidates else None
    return None if reason is None else str(getattr(reason, "value", reason))


def _blocked(response: Any) -> bool:
    feedback = getattr(response, "prompt_feedback", None)
    return getattr(feedback, "block_reason", None) is not None


def _async_transport() -> Any:
    """A plain httpx2 (or httpx) transport: given one, the SDK uses httpx rather than
    aiohttp, whose client silently sends a request again on a dropped connection."""
    return http_library().AsyncHTTPTransport(verify=shared_ssl_context())


async def _close(client: Any) -> None:
    """Close both of the SDK client's HTTP clients."""
    await client.aio.aclose()
    client.close()


class GeminiApiAdapter(ApiAdapter):
    """The Gemini API; see the module docstring."""

    name: ClassVar[str] = "gemini-api"
    provider: ClassVar[str] = "gemini"
    price_provider: ClassVar[str] = "google"
    sdk_module: ClassVar[str] = "google.genai"
    extra: ClassVar[str] = "gemini"
    provider_env: ClassVar[ProviderEnv] = GEMINI_ENV
    default_base_url: ClassVar[str] = "https://generativelanguage.googleapis.com/"

    async def call(self, call: ApiCall) -> Reply:
        types = call.sdk.types
        settings = call.settings
        config: dict[str, Any] = {}
        if call.system:
            config["system_instruction"] = call.system
        if settings.max_tokens is not None:
            config["max_output_tokens"] = settings.max_tokens
        if settings.temperature is not None:
            config["temperature"] = settings.temperature
        # The attempt's own headers and deadline go with the request: the client may be
        # shared by every attempt of a batch (backstay.adapters.api._clients).
        config["http_options"] = types.HttpOptions(
            timeout=max(1, round(call.request.timeout_s * _MS)), headers=dict(call.headers)
        )

        def build() -> Any:
            options = types.HttpOptions(
                base_url=call.base_url,
                # The process's TLS context (backstay.adapters.api._tls), for both of the
                # SDK's clients and its websocket one: the SDK would build one per client.
                client_args={"verify": shared_ssl_context()},
                async_client_args={
                    "transport": _async_transport(),
                    "event_hooks": {"response": [record_rate_limits]},
                    "verify": shared_ssl_context(),
                    "ssl": shared_ssl_context(),
                },
            )
            return call.sdk.Client(api_key=call.api_key, vertexai=False, http_options=options)

        params: dict[str, Any] = {
            "model": call.request.model,
            "contents": call.prompt,
            "config": types.GenerateContentConfig(**config),
        }
        key = (self.name, call.request.model, call.base_url, call.api_key)
        async with attempt_client(key, build, close=_close) as client:
            if settings.stream:
                return await self._stream(client, call, params)
            response = await client.aio.models.generate_content(**params)
        text = _text(response)
        call.transcript.delta(text)
        return Reply(
            usage=_usage(response.usage_metadata),
            body=response.model_dump(mode="json", by_alias=True, exclude_none=True),
            text=text,
            stop=_finish(response),
        )

    async def _stream(self, client: Any, call: ApiCall, params: dict[str, Any]) -> Reply:
        chunks = await client.aio.models.generate_content_stream(**params)
        usage = Usage(api_calls=1)
        last: Any = None
        async for chunk in call.paced(aiter(chunks)):
            call.transcript.delta(_text(chunk))
            if chunk.usage_metadata is not None:
                usage = _usage(chunk.usage_metadata)
            last = chunk
        if last is None or (_finish(last) is None and not _blocked(last)):
            raise cut_short(self.provider)
        return Reply(
            usage=usage,
            body=last.model_dump(mode="json", by_alias=True, exclude_none=True),
            stop=_finish(last),
        )
