"""``AnthropicApiAdapter`` (``anthropic-api``): one Messages API call per attempt, through
the official ``anthropic`` SDK (``pip install 'backstay[anthropic]'``).

The prompt is the one user message, the tier's system prompt the ``system`` parameter,
``max_tokens`` defaults to 4096. Streaming uses ``messages.stream`` (text deltas as they
arrive); an ``event: error`` inside the stream reaches us as the SDK's ``APIStatusError``
with status 200 and is classified by its ``error.type`` (``overloaded_error`` →
``ERR_LLM_OVERLOADED``). Usage: ``input_tokens`` (uncached), ``output_tokens``,
``cache_read_input_tokens``, ``cache_creation_input_tokens``. Settings and the rest of
the attempt: ``backstay.adapters.api.base``.
"""

from __future__ import annotations

from typing import Any, ClassVar, Final

from backstay.adapters.api._clients import attempt_client, record_rate_limits
from backstay.adapters.api._tls import shared_ssl_context
from backstay.adapters.api.base import ApiAdapter, ApiCall, Reply, cut_short
from backstay.adapters.provider_env import ANTHROPIC_ENV, ProviderEnv
from backstay.adapters.usage import Usage

__all__ = ["AnthropicApiAdapter"]

DEFAULT_MAX_TOKENS: Final = 4096
AUTH_TOKEN_VARIABLE: Final = "ANTHROPIC_AUTH_TOKEN"  # noqa: S105 - a variable name


def _usage(message: Any) -> Usage:
    usage = getattr(message, "usage", None)

    def count(name: str) -> int:
        value = getattr(usage, name, None)
        return value if isinstance(value, int) else 0

    return Usage(
        input_tokens=count("input_tokens"),
        output_tokens=count("output_tokens"),
        cache_read_tokens=count("cache_read_input_tokens"),
        cache_write_tokens=count("cache_creation_input_tokens"),
        api_calls=1,
    )


def _text(message: Any) -> str:
    return "".join(
        block.text for block in getattr(message, "content", None) or [] if block.type == "text"
    )


class AnthropicApiAdapter(ApiAdapter):
    """The Anthropic Messages API; see the module docstring."""

    name: ClassVar[str] = "anthropic-api"
    provider: ClassVar[str] = "anthropic"
    price_provider: ClassVar[str] = "anthropic"
    sdk_module: ClassVar[str] = "anthropic"
    extra: ClassVar[str] = "anthropic"
    provider_env: ClassVar[ProviderEnv] = ANTHROPIC_ENV
    default_base_url: ClassVar[str] = "https://api.anthropic.com"
    default_max_tokens: ClassVar[int | None] = DEFAULT_MAX_TOKENS

    async def call(self, call: ApiCall) -> Reply:
        settings = call.settings
        params: dict[str, Any] = {
            "model": call.request.model,
            "max_tokens": settings.max_tokens or DEFAULT_MAX_TOKENS,
            "messages": [{"role": "user", "content": call.prompt}],
        }
        if call.system:
            params["system"] = call.system
        if settings.temperature is not None:
            params["temperature"] = settings.temperature
        # The attempt's own headers and deadline go with the request: the client may be
        # shared by every attempt of a batch (backstay.adapters.api._clients).
        params["extra_headers"] = dict(call.headers)
        params["timeout"] = call.request.timeout_s
        # A key from ANTHROPIC_AUTH_TOKEN is a bearer token, sent as the SDK sends it.
        token = call.key_variable == AUTH_TOKEN_VARIABLE

        def build() -> Any:
            return call.sdk.AsyncAnthropic(
                api_key=None if token else call.api_key,
                auth_token=call.api_key if token else None,
                base_url=call.base_url,
                max_retries=0,
                http_client=call.sdk.DefaultAsyncHttpxClient(
                    verify=shared_ssl_context(call.base_url),
                    event_hooks={"response": [record_rate_limits]},
                ),
            )

        key = (self.name, call.request.model, call.base_url, call.api_key, token)
        async with attempt_client(key, build) as client:
            if settings.stream:
                async with client.messages.stream(**params) as stream:
                    async for event in call.paced(aiter(stream)):
                        if event.type == "text":
                            call.transcript.delta(event.text)
                    message = await stream.get_final_message()
                if message.stop_reason is None:
                    raise cut_short(self.provider)
                text = None
            else:
                message = await client.messages.create(**params)
                text = _text(message)
                call.transcript.delta(text)
        return Reply(
            usage=_usage(message),
            body=message.model_dump(mode="json"),
            text=text,
            stop=message.stop_reason,
        )
