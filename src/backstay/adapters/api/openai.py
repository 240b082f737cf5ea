"""``OpenAIApiAdapter`` (``openai-api``): one call per attempt to the OpenAI API or any
OpenAI-compatible server (vLLM, Ollama, LiteLLM proxy …: set ``base_url``), through the
official ``openai`` SDK (``pip install 'backstay[openai]'``).

``api: chat`` (the default) uses Chat Completions: the tier's system prompt as a
``system`` message, then the prompt; streamed with ``stream_options.include_usage`` so
the last chunk carries the usage; an error inside the stream (``data: {"error": …}``)
reaches us as the SDK's bare ``APIError`` and is classified by its body. ``api:
responses`` uses the Responses API: the system prompt as ``instructions``; ``error`` and
``response.failed`` events are classified by their ``error`` object. Usage: OpenAI counts
cached tokens inside the prompt tokens, so ``input_tokens`` is the prompt minus
``cached_tokens``, which become ``cache_read_tokens``. ``OPENAI_ORG_ID`` and
``OPENAI_PROJECT_ID`` of the request's environment are the client's organization and
project. Settings and the rest of the attempt: ``backstay.adapters.api.base``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from backstay.adapters.api._clients import attempt_client, record_rate_limits
from backstay.adapters.api._tls import shared_ssl_context
from backstay.adapters.api.base import ApiAdapter, ApiCall, Reply, ReplyFailed, cut_short
from backstay.adapters.api.settings import COMMON_KEYS
from backstay.adapters.provider_env import OPENAI_ENV, ProviderEnv
from backstay.adapters.usage import Usage
from backstay.classify import classify_response

__all__ = ["OpenAIApiAdapter"]


def _count(obj: Any, *path: str) -> int:
    for name in path:
        obj = getattr(obj, name, None)
    return obj if isinstance(obj, int) else 0


def _usage(usage: Any, *, prompt: str, output: str) -> Usage:
    """OpenAI's usage (cached tokens inside the prompt count) in backstay's convention."""
    details = "prompt_tokens_details" if prompt == "prompt_tokens" else "input_tokens_details"
    cached = _count(usage, details, "cached_tokens")
    return Usage(
        input_tokens=max(0, _count(usage, prompt) - cached),
        output_tokens=_count(usage, output),
        cache_read_tokens=cached,
        api_calls=1,
    )


def _chat_usage(usage: Any) -> Usage:
    return _usage(usage, prompt="prompt_tokens", output="completion_tokens")


def _responses_usage(usage: Any) -> Usage:
    return _usage(usage, prompt="input_tokens", output="output_tokens")


def _event_failure(error: Any) -> ReplyFailed:
    """An error object of a Responses stream, classified as the body of a 200 stream."""
    body = error.model_dump(mode="json") if hasattr(error, "model_dump") else error
    if isinstance(body, dict) and "error" not in body:
        body = {"error": body}
    return ReplyFailed(classify_response(200, None, body, provider="openai"))


def _per_request(call: ApiCall) -> dict[str, Any]:
    """The attempt's own headers and deadline, sent with the request: the client may be
    shared by every attempt of a batch (``backstay.adapters.api._clients``)."""
    return {"extra_headers": dict(call.headers), "timeout": call.request.timeout_s}


class OpenAIApiAdapter(ApiAdapter):
    """The OpenAI API (Chat Completions or Responses); see the module docstring."""

    name: ClassVar[str] = "openai-api"
    provider: ClassVar[str] = "openai"
    price_provider: ClassVar[str] = "openai"
    sdk_module: ClassVar[str] = "openai"
    extra: ClassVar[str] = "openai"
    provider_env: ClassVar[ProviderEnv] = OPENAI_ENV
    default_base_url: ClassVar[str] = "https://api.openai.com/v1"
    config_keys: ClassVar[frozenset[str]] = COMMON_KEYS | {"api"}

    async def call(self, call: ApiCall) -> Reply:
        env = call.request.env
        organization = env.get("OPENAI_ORG_ID") or None
        project = env.get("OPENAI_PROJECT_ID") or None

        def build() -> Any:
            return call.sdk.AsyncOpenAI(
                api_key=call.api_key,
                organization=organization,
                project=project,
                base_url=call.base_url,
                max_retries=0,
                http_client=call.sdk.DefaultAsyncHttpxClient(
                    verify=shared_ssl_context(call.base_url),
                    event_hooks={"response": [record_rate_limits]},
                ),
            )

        key = (self.name, call.request.model, call.base_url, call.api_key, organization, project)
        async with attempt_client(key, build) as client:
            if call.settings.api == "responses":
                return await self._responses(client, call)
            return await self._chat(client, call)

    async def _chat(self, client: Any, call: ApiCall) -> Reply:
        messages = [{"role": "user", "content": call.prompt}]
        if call.system:
            messages.insert(0, {"role": "system", "content": call.system})
        params: dict[str, Any] = {"model": call.request.model, "messages": messages}
        params.update(_per_request(call))
        if call.settings.max_tokens is not None:
            params["max_tokens"] = call.settings.max_tokens
        if call.settings.temperature is not None:
            params["temperature"] = call.settings.temperature
        if not call.settings.stream:
            completion = await client.chat.completions.create(**params)
            choice = completion.choices[0] if completion.choices else None
            text = (choice.message.content or "") if choice is not None else ""
            call.transcript.delta(text)
            return Reply(
                usage=_chat_usage(completion.usage),
                body=completion.model_dump(mode="json"),
                text=text,
                stop=None if choice is None else choice.finish_reason,
            )
        stream = await client.chat.completions.create(
            **params, stream=True, stream_options={"include_usage": True}
        )
        usage = Usage(api_calls=1)
        finish: str | None = None
        refusal = ""
        async with stream:
            async for chunk in call.paced(aiter(stream)):
                for choice in chunk.choices or ():
                    call.transcript.delta(choice.delta.content or "")
                    refusal += getattr(choice.delta, "refusal", None) or ""
                    finish = choice.finish_reason or finish
                if chunk.usage is not None:
                    usage = _chat_usage(chunk.usage)
        if finish is None:
            raise cut_short(self.provider)
        body = {"choices": [{"finish_reason": finish, "message": {"refusal": refusal or None}}]}
        return Reply(usage=usage, body=body, stop=finish)

    async def _responses(self, client: Any, call: ApiCall) -> Reply:
        params: dict[str, Any] = {"model": call.request.model, "input": call.prompt}
        params.update(_per_request(call))
        if call.system:
            params["instructions"] = call.system
        if call.settings.max_tokens is not None:
            params["max_output_tokens"] = call.settings.max_tokens
        if call.settings.temperature is not None:
            params["temperature"] = call.settings.temperature
        if not call.settings.stream:
            response = await client.responses.create(**params)
            call.transcript.delta(response.output_text)
            return self._final(response, text=response.output_text)
        stream = await client.responses.create(**params, stream=True)
        final: Any = None
        async with stream:
            async for event in call.paced(aiter(stream)):
                kind = event.type
                if kind == "response.output_text.delta":
                    call.transcript.delta(event.delta)
                elif kind == "error":
                    raise _event_failure(event)
                elif kind == "response.failed":
                    raise _event_failure(event.response.error or {"message": "response failed"})
                elif kind in ("response.completed", "response.incomplete"):
                    final = event.response
        if final is None:
            raise cut_short(self.provider)
        return self._final(final, text=None)

    @staticmethod
    def _final(response: Any, *, text: str | None) -> Reply:
        return Reply(
            usage=_responses_usage(response.usage),
            body=response.model_dump(mode="json"),
            text=text,
            stop=response.status,
        )
