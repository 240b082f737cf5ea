"""``backstay gateway``: serve the provider reverse proxy (docs/gateway.md) until Ctrl-C or
SIGTERM, printing its base URL first.

(About 570 lines: the command's many flags, each declared once with its help, and the
settings they make; the stores, spending and fallback parts live in modules of their own.)

``--store`` keeps its rate limiters and breakers where batches keep theirs: a Redis store
is shared by every gateway (and batch) on it, so a fleet holds one provider limit
together; a state directory keeps breakers in its SQLite file. ``retry.rate_limits`` of
the configuration (``--config``, else the ``backstay.yaml`` found as for every command)
caps each provider's limiter; every other one learns its limit from the headers. Its
``retry.policies.gateway``, when it has one, is the retry policy (else ``GATEWAY_POLICY``),
``--max-attempts``, ``--deadline`` and ``--max-retry-after`` overriding it.

``--budget-usd`` / ``--budget-tokens`` (``--budget-window``) cap what its requests that are
not of an agent run may spend: each request reserved before it is forwarded, settled with
its answers' usage, refused with a 400 once there is no room (``backstay.gateway.spending``;
kept in the gateway's own ledger beside ``--store``'s, else in this process:
``backstay.cli._gateway_spend``). ``--events PATH`` appends every event as a JSON line."""

from __future__ import annotations

import asyncio
import contextlib
import enum
import importlib.util
import os
import signal
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Final

import typer

from backstay.cli._errors import usage_error
from backstay.config import load_config
from backstay.errors import ConfigError
from backstay.gateway import GATEWAY_POLICY, Gateway, GatewaySettings, Upstreams
from backstay.gateway._aiohttp import loop_factory
from backstay.gateway.settings import configured_policy
from backstay.gateway.spending import BudgetWindow, GatewayBudget

if TYPE_CHECKING:
    from backstay.adapters.pricing import ModelPrice
    from backstay.config import BackstayConfig
    from backstay.engine.stores import StoreBundle
    from backstay.fallback.rules import FallbackRules
    from backstay.gateway.runs import RunTokens
    from backstay.gateway.spending import GatewayLedger, GatewaySpending

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
    "budget": "--budget-usd",
    "budget.usd": "--budget-usd",
    "budget.tokens": "--budget-tokens",
    "budget.window": "--budget-window",
}
_STORE_HELP: Final = (
    "Keep rate limiters and breakers in this store: redis://host:port/db (?namespace=NAME), "
    "shared by every gateway and batch on it, or a state directory (SQLite: breakers only); "
    "with --agent-runs, runs' requests are held against its spending budgets (without it, "
    "against the allowance each run's batch reserved for it); --budget-* spending, and a "
    "backstay run's, is kept in a ledger of its own beside it, shared by every gateway on it."
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
    """``--fallback MODEL=FALLBACK[,FALLBACK…]`` values as (model, fallback) pairs, a
    model's chain in the order given."""
    pairs: list[tuple[str, str]] = []
    for text in given:
        model, sep, chain = text.partition("=")
        fallbacks = [name.strip() for name in chain.split(",")]
        if not sep or not model.strip() or not all(fallbacks):
            raise ConfigError(
                f"must be MODEL=FALLBACK or MODEL=FALLBACK,FALLBACK…, got {text!r}",
                where="fallbacks",
            )
        pairs.extend((model.strip(), fallback) for fallback in fallbacks)
    return tuple(pairs)


def fallback_rules(
    on: bool,
    moves: list[str],
    thresholds: Mapping[str, float | None],
) -> FallbackRules | None:
    """The rules of ``--fallback-rules`` (``None``: moves by the circuit only), with
    ``--fallback-move KIND=MOVE`` over the table and the thresholds given (any of them
    turns the rules on)."""
    given = {name: value for name, value in thresholds.items() if value is not None}
    if not on and not moves and not given:
        return None
    from backstay.fallback.rules import FallbackRules  # noqa: PLC0415 - only when asked

    table: dict[str, str] = {}
    for text in moves:
        kind, sep, move = text.partition("=")
        if not sep or not kind.strip() or not move.strip():
            raise ConfigError(f"must be KIND=MOVE, got {text!r}", where="--fallback-move")
        table[kind.strip()] = move.strip()
    try:
        return FallbackRules(moves=table, **given)  # type: ignore[arg-type]
    except ConfigError as err:
        flag = "--fallback-move" if (err.where or "").startswith("fallback.moves") else None
        for name in given:
            if err.where == f"fallback.{name}":
                flag = _RULE_FLAGS[name]
        raise ConfigError(err.reason, where=flag or err.where) from None


# FallbackRules' thresholds → the flags that give them.
_RULE_FLAGS: Final = {
    "long_wait_s": "--fallback-long-wait",
    "quota_cooldown_s": "--fallback-quota-cooldown",
}


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


def _spending(
    budget: GatewayBudget | None, prices: Mapping[str, ModelPrice], ledger: GatewayLedger | None
) -> GatewaySpending | None:
    """The gateway's spending budget (``None``: none), its rows in ``ledger`` (else in this
    process). A USD budget needs a price for every model: ``--price`` or the price table."""
    if budget is None:
        return None
    from backstay.cli._gateway_spend import table_price  # noqa: PLC0415
    from backstay.gateway.spending import GatewaySpending, MemoryRows  # noqa: PLC0415

    if budget.usd is not None and not prices and importlib.util.find_spec("genai_prices") is None:
        raise ConfigError(
            "a USD budget prices each request: install the price table "
            "(pip install 'backstay[prices]') or give each model's --price",
            where="--budget-usd",
        )
    rows = MemoryRows() if ledger is None else ledger
    return GatewaySpending(budget, rows, table_price(prices))


def _gateway(
    settings: GatewaySettings,
    store: str | None,
    config: BackstayConfig,
    budget: tuple[GatewayBudget | None, Mapping[str, ModelPrice]] = (None, {}),
    *,
    agent_runs: bool = False,
) -> tuple[Gateway, StoreBundle | None, GatewayLedger | None]:
    """The gateway of ``settings``: its limiters capped by the configuration's
    ``retry.rate_limits``, they and its breakers in the store at ``store`` (else in this
    process), its requests held to ``budget`` at its prices; the stores and the
    gateway's own spend ledger beside them (opened for a budget or ``agent_runs`` only),
    which the caller closes."""
    from backstay.breaker import BreakerRegistry  # noqa: PLC0415 - loaded when it serves
    from backstay.policy.limit_keys import credential_limits, provider_limits  # noqa: PLC0415
    from backstay.policy.limiters import RateLimiterRegistry  # noqa: PLC0415

    # A limit of one API key (provider#fingerprint) is found under provider#fingerprint.
    limits = credential_limits(provider_limits(config.engine_rate_limits()))
    if store is None:
        spending = _spending(*budget, None)
        return (
            Gateway(settings, limiters=RateLimiterRegistry(limits), spending=spending),
            None,
            None,
        )
    from backstay.cli._gateway_spend import gateway_ledger  # noqa: PLC0415

    bundle = _open_store(store)
    for warning in bundle.warnings:
        sys.stderr.write(f"warning: {warning}\n")
    ledger = None
    try:
        if budget[0] is not None or agent_runs:
            ledger = gateway_ledger(bundle)
        breakers = BreakerRegistry(settings=settings.breaker, store=bundle.breakers)
        gateway = Gateway(
            settings,
            breakers=breakers,
            limiters=bundle.rate_limiter_registry(limits),
            spending=_spending(*budget, ledger),
        )
    except BaseException:
        if ledger is not None:
            ledger.close()
        bundle.close()
        raise
    return gateway, bundle, ledger


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


def _budget(
    usd: float | None, tokens: int | None, window: str, *, agent_runs: bool
) -> GatewayBudget | None:
    """The budget the flags give (``None``: none)."""
    if usd is None and tokens is None and window == "total":
        return None
    budget = GatewayBudget(usd=usd, tokens=tokens, window=_window(window))
    if agent_runs:  # it serves runs only: each is held to its own budget
        raise ConfigError(
            "caps the requests that are not of an agent run, and --agent-runs serves none: "
            "a run is held to its own budget",
            where="--budget-usd" if usd is not None else "--budget-tokens",
        )
    return budget


def _window(text: str) -> BudgetWindow:
    try:
        return BudgetWindow(text.strip().lower())
    except ValueError:
        known = ", ".join(w.value for w in BudgetWindow)
        raise ConfigError(
            f"must be one of {known}, got {text!r}", where="--budget-window"
        ) from None


def _shared_runs(bundle: StoreBundle | None, ledger: GatewayLedger | None) -> RunTokens:
    """The run tokens of ``--agent-runs``: a batch's run held against the store's ledger
    (else its allowance); a single run's, in the gateway's own ledger beside it."""
    from backstay.cli._gateway_runs import shared_runs  # noqa: PLC0415
    from backstay.engine.shared_budget import SharedBudgets  # noqa: PLC0415

    runs = shared_runs(bundle)  # budgets: the store's ledger, else allowances
    if ledger is not None and isinstance(runs.budgets, SharedBudgets):
        from backstay.cli._gateway_spend import RunLedgerBudgets  # noqa: PLC0415

        runs.budgets = RunLedgerBudgets(runs.budgets, ledger)
    return runs


@contextlib.contextmanager
def _event_log(path: Path) -> Iterator[None]:
    """Every event of the process appended to ``path`` while the block runs."""
    from backstay.events import BUS  # noqa: PLC0415
    from backstay.events.log import EventLog  # noqa: PLC0415

    try:
        log = EventLog(path)
    except OSError as err:
        raise ConfigError(f"cannot write {path}: {err.strerror or err}", where="--events") from None
    BUS.add(log)
    try:
        yield
    finally:
        BUS.remove(log)
        log.close()


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
            metavar="MODEL=FALLBACK[,FALLBACK…]",
            help="While MODEL's circuit is open, its requests go to FALLBACK, a model of the "
            "same provider; a chain goes to the first model whose circuit is not open "
            "(repeat for more models, or to add to MODEL's chain).",
        ),
    ] = None,
    fallback_rules_on: Annotated[
        bool,
        typer.Option(
            "--fallback-rules",
            help="Also move a request along its chain by its failure's kind, as batches do: "
            "a 5xx, timeout or spent quota moves on at once, a rate limit asking to wait "
            "longer than --fallback-long-wait too, a context overflow never; the failing "
            "model cools down for that key.",
        ),
    ] = False,
    fallback_move: Annotated[
        list[str] | None,
        typer.Option(
            "--fallback-move",
            metavar="KIND=MOVE",
            help="With --fallback-rules (implied): a failure kind's move, one of next, "
            "next_if_long_wait, never (repeatable; e.g. server_error=never).",
        ),
    ] = None,
    fallback_long_wait: Annotated[
        float | None,
        typer.Option(
            "--fallback-long-wait",
            min=0.0,
            help="With --fallback-rules (implied): a rate limit asking to wait longer than "
            "this many seconds moves on (default 10).",
        ),
    ] = None,
    fallback_quota_cooldown: Annotated[
        float | None,
        typer.Option(
            "--fallback-quota-cooldown",
            min=0.0,
            help="With --fallback-rules (implied): seconds a model whose quota a key spent "
            "stays out of that key's chain when the provider named no reset (default 3600).",
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
    budget_usd: Annotated[
        float | None,
        typer.Option(
            "--budget-usd",
            min=0.0,
            envvar="BACKSTAY_GATEWAY_BUDGET_USD",
            help="At most this many USD (priced with the price table, or --price) on the "
            "requests that are not of an agent run, per --budget-window; a request with no "
            "room gets a 400. Shared by every gateway on one --store.",
        ),
    ] = None,
    budget_tokens: Annotated[
        int | None,
        typer.Option(
            "--budget-tokens",
            min=0,
            envvar="BACKSTAY_GATEWAY_BUDGET_TOKENS",
            help="At most this many tokens (prompt and output) on those requests, per "
            "--budget-window.",
        ),
    ] = None,
    budget_window: Annotated[
        str,
        typer.Option(
            "--budget-window",
            metavar="total|hour|day|week|month",
            envvar="BACKSTAY_GATEWAY_BUDGET_WINDOW",
            help="The budget counts for ever (total, the default) or afresh each calendar "
            "hour, day, week (from Monday) or month, in UTC.",
        ),
    ] = "total",
    price: Annotated[
        list[str] | None,
        typer.Option(
            "--price",
            metavar="MODEL=INPUT,OUTPUT",
            help="A model's price in USD per million input and output tokens, for a USD "
            "budget (before the price table; repeat for more models).",
        ),
    ] = None,
    events: Annotated[
        Path | None,
        typer.Option("--events", metavar="PATH", help="Append every event as a JSON line here."),
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
            fallback_rules=fallback_rules(
                fallback_rules_on,
                fallback_move or [],
                {
                    "long_wait_s": fallback_long_wait,
                    "quota_cooldown_s": fallback_quota_cooldown,
                },
            ),
        )
        budget = _budget(budget_usd, budget_tokens, budget_window, agent_runs=agent_runs)
        _check_agent_runs(agent_runs, settings)
        from backstay.cli._gateway_spend import price_pairs  # noqa: PLC0415 - on use

        prices = price_pairs(price or []) if price else {}
        served, bundle, ledger = _gateway(
            settings, store, config, (budget, prices), agent_runs=agent_runs
        )
        if agent_runs:  # run tokens, opened over HTTP (backstay.gateway.run_admin)
            served.runs = _shared_runs(bundle, ledger)
        try:
            with (
                contextlib.ExitStack() as logged,
                asyncio.Runner(loop_factory=loop_factory()) as runner,  # uvloop's if installed
            ):
                if events is not None:
                    logged.enter_context(_event_log(events))
                runner.run(_serve(served))
        finally:
            if ledger is not None:
                ledger.close()
            if bundle is not None:
                bundle.close()
    except ConfigError as err:
        flag = _FLAGS.get(err.where or "")
        raise usage_error(err if flag is None else ConfigError(err.reason, where=flag)) from None
