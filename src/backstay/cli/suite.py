"""``backstay suite``: check a suite file and show the runs it expands to, print the
format's JSON Schema."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from backstay.adapters.registry import adapter_names
from backstay.cli import _options
from backstay.cli._errors import usage_error
from backstay.cli._provider_env import env_line
from backstay.config import Suite, SuiteTask, load_config, load_suite, suite_schema, task_run_id
from backstay.errors import ConfigError

app = typer.Typer(
    name="suite",
    help="Check suites of agent tasks (see docs/suite.md).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

CONFIG_HELP = (
    "The configuration file whose policies a suite may name "
    "(default: $BACKSTAY_CONFIG, else ./backstay.yaml if any)."
)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _task_line(task: SuiteTask, width: int) -> str:
    ids = [task_run_id(tier.tier_id, n) for tier in task.tiers for n in range(1, task.runs + 1)]
    span = ids[0] if len(ids) == 1 else f"{ids[0]} … {ids[-1]}"
    tiers = ", ".join(tier.tier_id for tier in task.tiers)
    return (
        f"  {task.id:<{width}}  {task.adapter} / {task.model}; policy {task.policy.name}; "
        f"tiers {tiers} × {_plural(task.runs, 'run')} = {len(ids)} ({span})"
    )


def summary(suite: Suite, file: Path) -> list[str]:
    """The lines ``suite check`` prints: the suite, one line per task, then what each
    adapter (a task's own or a fallback's) takes from the environment (names, never
    values)."""
    runs = suite.expand()
    head = (
        f"OK {file}: suite {suite.name!r}, {_plural(len(suite.tasks), 'task')}, "
        f"{_plural(len(runs), 'run')}"
    )
    width = max(len(task.id) for task in suite.tasks)
    adapters = sorted(
        {task.adapter for task in suite.tasks}
        | {str(c.adapter) for task in suite.tasks for c in task.fallbacks}
    )
    envs = [env_line(suite.options_for(name)) for name in adapters]
    return [
        head,
        *(_task_line(task, width) for task in suite.tasks),
        *(line for line in envs if line is not None),
    ]


def check(
    file: Annotated[Path, typer.Argument(help="The suite file to check.")],
    config_file: Annotated[Path | None, typer.Option("--config", help=CONFIG_HELP)] = None,
    sets: _options.SetOption = None,
    list_runs: Annotated[
        bool, typer.Option("--runs", help="Also list every run, as task/tier-run_NN.")
    ] = False,
) -> None:
    """Check FILE: a summary of the runs it expands to, or every problem in it (exit 2)."""
    try:
        registry = load_config(config_file, overrides=sets or []).registry
        suite = load_suite(file, registry=registry)
    except ConfigError as err:
        raise usage_error(err) from None
    for line in summary(suite, file):
        typer.echo(line)
    if list_runs:
        for run in suite.expand():
            typer.echo(run.key)
    available = adapter_names()
    for adapter in sorted({task.adapter for task in suite.tasks} - set(available)):
        typer.echo(
            f"note: adapter {adapter!r} is not available yet: its runs cannot start "
            f"(available: {', '.join(available)})",
            err=True,
        )


def schema() -> None:
    """The JSON Schema of suite files (docs/suite.schema.json)."""
    sys.stdout.write(json.dumps(suite_schema(), indent=2) + "\n")


app.command("check")(check)
app.command("schema")(schema)
