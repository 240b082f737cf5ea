"""``backstay gateway``: serve the provider reverse proxy (docs/gateway.md) until Ctrl-C or
SIGTERM, printing its base URL first.

``--store`` keeps its rate limiters and breakers where batches keep theirs: a Redis store
is shared by every gateway (and batch) on it, so a fleet holds one provider limit
together; a state directory keeps breakers in its SQLite file. ``retry.rate_limits`` of
the configuration (``--config``, else the ``backstay.yaml`` found as for every command)
caps each provider's limiter; every other one learns its limit from the headers. Its
``retry.policies.gateway``, when it has one, is the retry policy (else ``GATEWAY_POLICY``),
``--max-attempts``, ``--deadline`` and ``--max-retry-after`` overriding it."""

from __future__ import annotations

import asyncio
import enum
import os
import signal
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Final

import typer

from backstay.cli._errors import usage_error
from backstay.config import load_config
from backstay.errors import ConfigError
from backstay.gateway import GATEWAY_POLICY, Gateway, GatewaySettings, Upstreams
from backstay.gateway._aiohttp import loop_factory
from backstay.gateway.settings import configured_policy

if TYPE_CHECKING:
    from backstay.config import BackstayConfig
    from backstay.engine.stores import StoreBundle

TOKEN_ENV_VAR: Final = "BACKSTAY_GATEWAY_TOKEN"  # noqa: S105 - a variable name
# What GatewaySettings calls its fields → the flags that give them.
_FLAGS: Final = {
    "host": "--host",
    "port": "--port",
    "token": "--token-env",
    "upstream anthropic": "--anthropic-upstream",
    "upstream openai": "--openai-upstream",
    "upstream gemini": "--gemini-upstream",
    "fallbacks": "--fallback",
}
_STORE_HELP: Final = (
    "Keep rate limiters and breakers in this store: redis://host:port/db (?namespace=NAME), "
    "shared by every gateway and batch on it, or a state directory (SQLite: breakers only); "
    "with --agent-runs, runs' requests are held against its spending budgets (without it, "
    "against the allowance each run's batch reserved for it)."
)


class Buffer(enum.StrEnum):
    NONE = "none"
    STREAMS = "streams"


def _upstream_option(provider: str, default: str) -> object:
    return typer.Option(
        f"--{provider}-upstream",
        envvar=f"BACKSTAY_GATEWAY_{provider.upper()}_UPSTREAM",
        help=f"Base URL of the {provider} API (default {default}).",
    )


def fallback_pairs(given: list[str]) -> tuple[tuple[str, str], ...]:
    """``--fallback MODEL=FALLBACK`` values as (model, fallback) pairs."""
    pairs: list[tuple[str, str]] = []
    for text in given:
        model, sep, fallback = text.partition("=")
        if not sep or not model.strip() or not fallback.strip():
            raise ConfigError(f"must be MODEL=FALLBACK, got {text!r}", where="fallbacks")
        pairs.append((model.strip(), fallback.strip()))
    return tuple(pairs)


def gateway_token(token_env: str | None, environ: Mapping[str, str]) -> str | None:
    """The token: from the variable ``token_env`` names (which must hold one), else from
    ``$BACKSTAY_GATEWAY_TOKEN`` when set and not empty, else none."""
    if token_env is None:
        return environ.get(TOKEN_ENV_VAR, "").strip() or None
    value = environ.get(token_env, "").strip() if token_env.strip() else ""
    if not value:
        raise ConfigError(f"${token_env} is not set or empty", where="--token-env")
    return value


def _open_store(text: str) -> StoreBundle:
    """The stores at ``--store`` (``ConfigError`` naming the flag when they cannot be opened)."""
    from backstay.store.location import parse_store  # noqa: PLC0415 - only with --store
    from backstay.store.open import open_stores  # noqa: PLC0415

    location = parse_store(text, where="--store")
    return open_stores(location, state_dir=location.path or Path.cwd())


def _gateway(
    settings: GatewaySettings, store: str | None, config: BackstayConfig
) -> tuple[Gateway, StoreBundle | None]:
    """The gateway of ``settings``: its limiters capped by the configuration's
    ``retry.rate_limits``, they and its breakers in the store at ``store`` (else in this
    process); and the stores, which the caller closes."""
    from backstay.breaker import BreakerRegistry  # noqa: PLC0415 - loaded when it serves
    from backstay.policy.limit_keys import credential_limits, provider_limits  # noqa: PLC0415
    from backstay.policy.limiters import RateLimiterRegistry  # noqa: PLC0415

    # A limit of one API key (provider#fingerprint) is found under provider#fingerprint.
    limits = credential_limits(provider_limits(config.engine_rate_limits()))
    if store is None:
        return Gateway(settings, limiters=RateLimiterRegistry(limits)), None
    bundle = _open_store(store)
    for warning in bundle.warnings:
        sys.stderr.write(f"warning: {warning}\n")
    try:
        breakers = BreakerRegistry(settings=settings.breaker, store=bundle.breakers)
        gateway = Gateway(
            settings, breakers=breakers, limiters=bundle.rate_limiter_registry(limits)
        )
    except BaseException:
        bundle.close()
        raise
    return gateway, bundle


def _print_fingerprint(name: str, environ: Mapping[str, str]) -> None:
    """Print the fingerprint of the key in ``$name`` (a usage error when it is unset)."""
    from backstay.policy.limit_keys import key_fingerprint  # noqa: PLC0415

    value = environ.get(name, "").strip() if name.strip() else ""
    if not value:
        err = ConfigError(f"${name} is not set or empty", where="--fingerprint-env")
        raise usage_error(err)
    sys.stdout.write(f"{key_fingerprint(value)}\n")


def _check_agent_runs(agent_runs: bool, settings: GatewaySettings) -> None:
    """Runs are opened over HTTP only with the gateway's token."""
    if agent_runs and settings.token is None:
        raise ConfigError(
            f"--agent-runs needs a token (--token-env, or ${TOKEN_ENV_VAR})",
            where="--agent-runs",
        )


async def _serve(gateway: Gateway) -> None:
    await gateway.astart()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    sys.stdout.write(f"gateway listening on {gateway.url}\n")
    sys.stdout.flush()
    try:
        await stop.wait()
    finally:
        await gateway.astop()


def gateway(
    host: Annotated[
        str, typer.Option("--host", help="Address to bind (loopback unless --allow-remote).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port; 0 picks a free one.")] = 8787,
    upstream: Annotated[
        str | None, typer.Option("--upstream", help="One base URL for every provider.")
    ] = None,
    anthropic_upstream: Annotated[
        str | None, _upstream_option("anthropic", Upstreams().anthropic)
    ] = None,
    openai_upstream: Annotated[str | None, _upstream_option("openai", Upstreams().openai)] = None,
    gemini_upstream: Annotated[str | None, _upstream_option("gemini", Upstreams().gemini)] = None,
    buffer: Annotated[
        Buffer,
        typer.Option(
            "--buffer",
            help="streams: hold each stream until it completed, so a failure mid-stream is "
            "retried too; none: retry a stream only until its first event is forwarded.",
        ),
    ] = Buffer.NONE,
    max_attempts: Annotated[
        int | None,
        typer.Option(
            "--max-attempts",
            min=1,
            help="Attempts per request (default: the retry policy's, "
            f"{GATEWAY_POLICY.max_attempts} in the built-in one).",
        ),
    ] = None,
    deadline: Annotated[
        float | None,
        typer.Option(
            "--deadline",
            min=0.0,
            help="Seconds a request may take in all (default: the retry policy's, "
            f"{GATEWAY_POLICY.deadline_s:g} in the built-in one).",
        ),
    ] = None,
    max_retry_after: Annotated[
        float | None,
        typer.Option(
            "--max-retry-after",
            min=0.0,
            help="Longest Retry-After waited; a longer one returns the provider's 429 "
            f"(default: the retry policy's, {GATEWAY_POLICY.max_retry_after_s:g} in the "
            "built-in one).",
        ),
    ] = None,
    allow_remote: Annotated[
        bool,
        typer.Option("--allow-remote", help="Allow a non-loopback --host (needs a token)."),
    ] = False,
    token_env: Annotated[
        str | None,
        typer.Option(
            "--token-env",
            metavar="NAME",
            help="Variable holding the token every request must carry in "
            f"x-backstay-gateway-token. Default: ${TOKEN_ENV_VAR} if set, else none.",
        ),
    ] = None,
    store: Annotated[str | None, typer.Option("--store", metavar="URL", help=_STORE_HELP)] = None,
    fallback: Annotated[
        list[str] | None,
        typer.Option(
            "--fallback",
            metavar="MODEL=FALLBACK",
            help="While MODEL's circuit is open, its requests go to FALLBACK, a model of the "
            "same provider (repeat for more models).",
        ),
    ] = None,
    agent_runs: Annotated[
        bool,
        typer.Option(
            "--agent-runs",
            help="Serve agent runs only: each request's API key must be a run token that "
            "backstay run/batch/resume --gateway URL opened with the gateway's token "
            "(--token-env); the real keys stay with the gateway.",
        ),
    ] = False,
    fingerprint_env: Annotated[
        str | None,
        typer.Option(
            "--fingerprint-env",
            metavar="NAME",
            help="Print the fingerprint of the API key in $NAME (for a limit of that key in "
            "retry.rate_limits: anthropic#FINGERPRINT) and exit.",
        ),
    ] = None,
    config_file: Annotated[
        Path | None,
        typer.Option(
            "--config",
            help="backstay.yaml whose retry.rate_limits cap the providers' limits and whose "
            "retry.policies.gateway, if any, is the retry policy (default: the one found "
            "as for every command).",
        ),
    ] = None,
) -> None:
    """Serve a reverse proxy for the Anthropic, OpenAI and Gemini APIs that retries what
    fails (classified, Retry-After honoured, a breaker per provider and model, one
    Idempotency-Key per request) and paces every request at its provider's rate limit,
    until Ctrl-C or SIGTERM.

    Point a client's base URL at the printed URL; its API key passes through unchanged.
    Exit code 0 after a clean stop, 2 for a bad flag, address or port.
    """
    if fingerprint_env is not None:
        _print_fingerprint(fingerprint_env, os.environ)
        return
    try:
        base = Upstreams.all(upstream) if upstream is not None else Upstreams()
        upstreams = Upstreams(
            anthropic=anthropic_upstream or base.anthropic,
            openai=openai_upstream or base.openai,
            gemini=gemini_upstream or base.gemini,
        )
        config = load_config(config_file)
        given = {
            "max_attempts": max_attempts,
            "deadline_s": deadline,
            "max_retry_after_s": max_retry_after,
        }
        policy = configured_policy(config.registry).derive(
            **{name: value for name, value in given.items() if value is not None}
        )
        settings = GatewaySettings(
            host=host,
            port=port,
            upstreams=upstreams,
            policy=policy,
            buffer_streams=buffer is Buffer.STREAMS,
            allow_remote=allow_remote,
            token=gateway_token(token_env, os.environ),
            fallbacks=fallback_pairs(fallback or []),
        )
        _check_agent_runs(agent_runs, settings)
        served, bundle = _gateway(settings, store, config)
        if agent_runs:  # run tokens, opened over HTTP (backstay.gateway.run_admin)
            from backstay.cli._gateway_runs import shared_runs  # noqa: PLC0415

            served.runs = shared_runs(bundle)  # budgets: the store's ledger, else allowances
        try:
            with asyncio.Runner(loop_factory=loop_factory()) as runner:  # uvloop's if installed
                runner.run(_serve(served))
        finally:
            if bundle is not None:
                bundle.close()
    except ConfigError as err:
        flag = _FLAGS.get(err.where or "")
        raise usage_error(err if flag is None else ConfigError(err.reason, where=flag)) from None
