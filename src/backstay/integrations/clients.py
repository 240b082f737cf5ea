"""SDK clients whose retries are backstay's: ``anthropic_client``, ``openai_client``,
``gemini_client`` and their async twins.

Each builds the official client with the SDK's own retries off (``max_retries=0``;
google-genai retries nothing unless asked) and its HTTP client sending through a
``RetryTransport`` under the given policy, breaker, budget and rate limiter. Passing
``max_retries`` or ``http_client`` is refused: a second retry loop under backstay's would
multiply attempts (3 SDK attempts × 3 backstay attempts = 9 requests, each with its own
backoff, and none of them seeing the breaker). Every other keyword goes to the client
(``api_key``, ``base_url``, ``timeout`` …), and the SDK reads its usual environment
variables for what is not given.

``fallback=chain`` (a ``FallbackChain`` of same-wire-format candidates: Anthropic models
for the anthropic clients, OpenAI-compatible endpoints for the openai ones) sends every
request through the chain instead (``backstay.integrations.fallback``): the chain's
policy, breakers and cooldowns decide, so ``policy``, ``breaker``, ``budget`` and
``limiter`` are refused with it; the client's ``base_url`` defaults to the chain's first
candidate's.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Final

from backstay.clock import Clock
from backstay.errors import ConfigError
from backstay.fallback.chain import FallbackChain
from backstay.integrations.fallback import (
    AsyncFallbackTransport,
    FallbackTransport,
    chain_base_url,
)
from backstay.integrations.httpx import AsyncRetryTransport, RetryTransport
from backstay.policy.protocols import CircuitBreakerLike, RateLimiterLike, RetryBudgetLike
from backstay.policy.registry import PolicySpec

if TYPE_CHECKING:
    import anthropic
    import openai
    from google import genai

__all__ = [
    "anthropic_client",
    "async_anthropic_client",
    "async_openai_client",
    "gemini_client",
    "openai_client",
]

_REFUSED: Final = ("max_retries", "http_client", "http_options")


def _sdk(module: str, extra: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ConfigError(
            f"needs the {module.partition('.')[0]!r} package, which is not installed: "
            f"pip install 'backstay[{extra}]'",
            where=module,
        ) from exc


def _http_library(client_class: type) -> Any:
    """The httpx library (``httpx`` or ``httpx2``) an SDK's default HTTP client is built on."""
    for cls in client_class.__mro__:
        root = cls.__module__.partition(".")[0]
        if root in ("httpx", "httpx2"):
            return importlib.import_module(root)
    raise ConfigError(
        f"{client_class.__module__}.{client_class.__name__} is not an httpx client",
        where="http_client",
    )


def _refuse(kwargs: dict[str, Any]) -> None:
    for name in _REFUSED:
        if name in kwargs:
            raise ConfigError(
                "is set by backstay: the SDK's retries stay off and backstay's transport "
                "does the retrying (two retry loops multiply attempts)",
                where=name,
            )


def _options(
    *,
    policy: PolicySpec,
    breaker: CircuitBreakerLike | None,
    budget: RetryBudgetLike | None,
    limiter: RateLimiterLike | None,
    clock: Clock | None,
    provider: str,
) -> dict[str, Any]:
    return {
        "policy": policy,
        "breaker": breaker,
        "budget": budget,
        "limiter": limiter,
        "clock": clock,
        "provider": provider,
        "operation": provider,
    }


def _transport(http: Any, *, is_async: bool, options: dict[str, Any], chain: Any) -> Any:
    """backstay's transport over the library's own: the chain's, else the retrying one."""
    if chain is not None:
        if not isinstance(chain, FallbackChain):
            raise ConfigError(f"must be a FallbackChain, got {chain!r}", where="fallback")
        given = [k for k in ("policy", "breaker", "budget", "limiter") if options[k] is not None]
        if given:
            raise ConfigError(
                "the fallback chain's own policy, breakers and cooldowns decide; "
                f"{', '.join(given)} cannot be given with it",
                where="fallback",
            )
        provider = options["provider"]
        if is_async:
            return AsyncFallbackTransport(http.AsyncHTTPTransport(), chain, provider=provider)
        return FallbackTransport(http.HTTPTransport(), chain, provider=provider)
    options = {k: v for k, v in options.items() if k != "fallback"}
    if is_async:
        return AsyncRetryTransport(http.AsyncHTTPTransport(), **options)
    return RetryTransport(http.HTTPTransport(), **options)


def _stainless_client(
    module: str,
    *,
    is_async: bool,
    provider: str,
    kwargs: dict[str, Any],
    options: dict[str, Any],
    fallback: FallbackChain | None = None,
) -> Any:
    """An anthropic or openai client (both are Stainless SDKs: same knobs)."""
    _refuse(kwargs)
    sdk = _sdk(module, module)
    if fallback is not None:
        kwargs = chain_base_url(fallback, kwargs)
    if is_async:
        http = _http_library(sdk.DefaultAsyncHttpxClient)
        transport = _transport(http, is_async=True, options=options, chain=fallback)
        http_client = sdk.DefaultAsyncHttpxClient(transport=transport)
        client_class = sdk.AsyncAnthropic if provider == "anthropic" else sdk.AsyncOpenAI
    else:
        http = _http_library(sdk.DefaultHttpxClient)
        transport = _transport(http, is_async=False, options=options, chain=fallback)
        http_client = sdk.DefaultHttpxClient(transport=transport)
        client_class = sdk.Anthropic if provider == "anthropic" else sdk.OpenAI
    return client_class(max_retries=0, http_client=http_client, **kwargs)


def anthropic_client(
    *,
    policy: PolicySpec = None,
    breaker: CircuitBreakerLike | None = None,
    budget: RetryBudgetLike | None = None,
    limiter: RateLimiterLike | None = None,
    clock: Clock | None = None,
    fallback: FallbackChain | None = None,
    **kwargs: Any,
) -> anthropic.Anthropic:
    """``anthropic.Anthropic(**kwargs)`` retrying under backstay; see the module."""
    options = _options(
        policy=policy,
        breaker=breaker,
        budget=budget,
        limiter=limiter,
        clock=clock,
        provider="anthropic",
    )
    client: anthropic.Anthropic = _stainless_client(
        "anthropic",
        is_async=False,
        provider="anthropic",
        kwargs=kwargs,
        options=options,
        fallback=fallback,
    )
    return client


def async_anthropic_client(
    *,
    policy: PolicySpec = None,
    breaker: CircuitBreakerLike | None = None,
    budget: RetryBudgetLike | None = None,
    limiter: RateLimiterLike | None = None,
    clock: Clock | None = None,
    fallback: FallbackChain | None = None,
    **kwargs: Any,
) -> anthropic.AsyncAnthropic:
    """``anthropic.AsyncAnthropic(**kwargs)`` retrying under backstay; see the module."""
    options = _options(
        policy=policy,
        breaker=breaker,
        budget=budget,
        limiter=limiter,
        clock=clock,
        provider="anthropic",
    )
    client: anthropic.AsyncAnthropic = _stainless_client(
        "anthropic",
        is_async=True,
        provider="anthropic",
        kwargs=kwargs,
        options=options,
        fallback=fallback,
    )
    return client


def openai_client(
    *,
    policy: PolicySpec = None,
    breaker: CircuitBreakerLike | None = None,
    budget: RetryBudgetLike | None = None,
    limiter: RateLimiterLike | None = None,
    clock: Clock | None = None,
    fallback: FallbackChain | None = None,
    **kwargs: Any,
) -> openai.OpenAI:
    """``openai.OpenAI(**kwargs)`` retrying under backstay; see the module."""
    options = _options(
        policy=policy,
        breaker=breaker,
        budget=budget,
        limiter=limiter,
        clock=clock,
        provider="openai",
    )
    client: openai.OpenAI = _stainless_client(
        "openai",
        is_async=False,
        provider="openai",
        kwargs=kwargs,
        options=options,
        fallback=fallback,
    )
    return client


def async_openai_client(
    *,
    policy: PolicySpec = None,
    breaker: CircuitBreakerLike | None = None,
    budget: RetryBudgetLike | None = None,
    limiter: RateLimiterLike | None = None,
    clock: Clock | None = None,
    fallback: FallbackChain | None = None,
    **kwargs: Any,
) -> openai.AsyncOpenAI:
    """``openai.AsyncOpenAI(**kwargs)`` retrying under backstay; see the module."""
    options = _options(
        policy=policy,
        breaker=breaker,
        budget=budget,
        limiter=limiter,
        clock=clock,
        provider="openai",
    )
    client: openai.AsyncOpenAI = _stainless_client(
        "openai",
        is_async=True,
        provider="openai",
        kwargs=kwargs,
        options=options,
        fallback=fallback,
    )
    return client


def gemini_client(
    *,
    policy: PolicySpec = None,
    breaker: CircuitBreakerLike | None = None,
    budget: RetryBudgetLike | None = None,
    limiter: RateLimiterLike | None = None,
    clock: Clock | None = None,
    base_url: str | None = None,
    **kwargs: Any,
) -> genai.Client:
    """``google.genai.Client(**kwargs)`` whose sync and async (``client.aio``) requests
    both retry under backstay (the async side uses httpx, not aiohttp, whose client
    resends a request on a dropped connection by itself). ``base_url`` goes into the
    client's ``HttpOptions``."""
    _refuse(kwargs)
    sdk = _sdk("google.genai", "gemini")
    try:
        http = importlib.import_module("httpx2")
    except ImportError:
        http = importlib.import_module("httpx")
    options = _options(
        policy=policy,
        breaker=breaker,
        budget=budget,
        limiter=limiter,
        clock=clock,
        provider="gemini",
    )
    http_options = sdk.types.HttpOptions(
        base_url=base_url,
        client_args={"transport": RetryTransport(http.HTTPTransport(), **options)},
        async_client_args={"transport": AsyncRetryTransport(http.AsyncHTTPTransport(), **options)},
    )
    client: genai.Client = sdk.Client(http_options=http_options, **kwargs)
    return client
