"""``backstay fake-provider serve``: run the fake Anthropic / OpenAI / Gemini server until
Ctrl-C or SIGTERM (docs/fake-provider.md)."""

from __future__ import annotations

import asyncio
import dataclasses
import signal
import sys
from pathlib import Path
from typing import Annotated

import typer

from backstay.cli._errors import usage_error
from backstay.errors import ConfigError
from backstay.fakeprovider import FakeProvider, RateLimit, Scenario, load_scenario, parse_fault

# What FakeProvider calls its settings → the flags that give them.
_FLAGS = {"host": "--host", "port": "--port"}

app = typer.Typer(
    name="fake-provider",
    help="A local fake LLM provider (Anthropic, OpenAI, Gemini wire formats) with faults.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _scenario(
    file: Path | None, faults: list[str], seed: int | None, rpm: int | None, tpm: int | None
) -> Scenario:
    scenario = load_scenario(file) if file is not None else Scenario()
    scenario = scenario.with_faults(*(parse_fault(spec) for spec in faults))
    if seed is not None:
        scenario = dataclasses.replace(scenario, seed=seed)
    if rpm is not None or tpm is not None:
        given = scenario.rate_limit or RateLimit()
        try:
            limit = RateLimit(
                requests_per_minute=rpm if rpm is not None else given.requests_per_minute,
                tokens_per_minute=tpm if tpm is not None else given.tokens_per_minute,
            )
        except ConfigError as err:
            flag = "--rpm" if "requests" in (err.where or "") else "--tpm"
            raise ConfigError(err.reason, where=flag) from None
        scenario = dataclasses.replace(scenario, rate_limit=limit)
    return scenario


async def _serve(fake: FakeProvider) -> None:
    await fake.astart()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    sys.stdout.write(f"fake provider listening on {fake.url}\n")
    sys.stdout.flush()
    try:
        await stop.wait()
    finally:
        await fake.astop()
    stats = fake.stats()
    sys.stderr.write(
        f"stopped after {stats.requests} requests "
        f"({sum(stats.by_fault.values())} faults, {stats.replays} replays)\n"
    )


@app.command("serve")
def serve(
    host: Annotated[str, typer.Option("--host", help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port; 0 picks a free one.")] = 0,
    scenario: Annotated[
        Path | None, typer.Option("--scenario", help="A scenario file (YAML).")
    ] = None,
    fault: Annotated[
        list[str] | None,
        typer.Option(
            "--fault",
            help="A fault, repeatable: KIND[:key=value]…, e.g. rate_limit:first=2:retry_after_s=3.",
        ),
    ] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="Seed of probability faults.")] = None,
    rpm: Annotated[int | None, typer.Option("--rpm", help="Enforced requests per minute.")] = None,
    tpm: Annotated[int | None, typer.Option("--tpm", help="Enforced tokens per minute.")] = None,
    log: Annotated[Path | None, typer.Option("--log", help="Request log (JSON Lines).")] = None,
) -> None:
    """Serve until Ctrl-C or SIGTERM, printing the base URL first.

    Exit code 0 after a clean stop, 2 for a bad scenario, flag, port or log file.
    """
    try:
        built = _scenario(scenario, fault or [], seed, rpm, tpm)
        fake = FakeProvider(built, host=host, port=port, log_path=log)
        asyncio.run(_serve(fake))
    except ConfigError as err:
        flag = _FLAGS.get(err.where or "")
        raise usage_error(err if flag is None else ConfigError(err.reason, where=flag)) from None
