"""The commands of ``backstay``, each loaded only when it runs or its own help is asked.

``backstay --help`` lists every command with its one-liner from :data:`COMMANDS`, without
importing any command's module: ``backstay --version`` and ``backstay --help`` pay for
none of them, ``backstay run`` for ``run`` alone. ``tests/cli/test_startup.py`` compares
each one-liner with the first paragraph of the command's own help, so they cannot drift.
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any, Final

import typer
import typer.main
from typer.core import TyperCommand

from backstay.cli._faults import FaultGuard

__all__ = ["COMMANDS", "LazyCommands", "Listed", "load"]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Listed:
    """One command: its name, where it lives, and its one-liner for ``backstay --help``.

    ``attr`` is the command's function, or the sub-application (``app``) of a command
    with subcommands (``group``); ``provider_help`` ends its help with the variables each
    adapter reads (``run``, ``batch``)."""

    name: str
    module: str
    attr: str
    help: str
    group: bool = False
    provider_help: bool = False


# In the order ``backstay --help`` lists them: the commands, then those with subcommands.
COMMANDS: Final[tuple[Listed, ...]] = (
    Listed(
        name="explain",
        module="backstay.cli.explain",
        attr="explain",
        help="Classify a failure and show the default action backstay takes.",
    ),
    Listed(
        name="run",
        module="backstay.cli.run",
        attr="run",
        help="Run one agent as an evaluation harness does, and exit with the run's exit code.",
        provider_help=True,
    ),
    Listed(
        name="batch",
        module="backstay.cli.batch",
        attr="batch",
        help="Run every run of the suite FILE (task × tier × run) in --state-dir.",
        provider_help=True,
    ),
    Listed(
        name="resume",
        module="backstay.cli.resume",
        attr="resume",
        help="Continue the batch in --state-dir: every task that can run now runs.",
    ),
    Listed(
        name="retry",
        module="backstay.cli.retry",
        attr="retry",
        help="Re-open failed or cancelled tasks of the batch in --state-dir: the next backstay\n"
        "resume runs them.",
    ),
    Listed(
        name="cancel",
        module="backstay.cli.cancel",
        attr="cancel",
        help="Cancel tasks of the batch in --state-dir that have not finished: they never run.",
    ),
    Listed(
        name="status",
        module="backstay.cli.status",
        attr="status",
        help="The batch in --state-dir: its tasks counted per state, and the tasks that need a\n"
        "person (failed, paused, escalated, running, interrupted), the first 50 of them.",
    ),
    Listed(
        name="events",
        module="backstay.cli.events",
        attr="events",
        help="The events of the batch in --state-dir (events.jsonl), one line each, oldest first.",
    ),
    Listed(
        name="serve",
        module="backstay.cli.serve",
        attr="serve",
        help="Serve /metrics (Prometheus), /healthz (liveness) and /readyz (readiness, as\n"
        "application/health+json) for the batch in --state-dir (or in --store), until Ctrl-C\n"
        "or SIGTERM.",
    ),
    Listed(
        name="health",
        module="backstay.cli.health",
        attr="health",
        help="Whether the batch in --state-dir is ready: its state file takes writes, which\n"
        "circuits are open, how many escalations wait, how many tasks were interrupted (no\n"
        "process runs them). Exit code 0 for pass or warn, 1 for fail, 2 when --state-dir\n"
        "holds no batch.",
    ),
    Listed(
        name="report",
        module="backstay.cli.report",
        attr="report",
        help="Write the HTML report of the batch in --state-dir and print its path.",
    ),
    Listed(
        name="gateway",
        module="backstay.cli.gateway",
        attr="gateway",
        help="Serve a reverse proxy for the Anthropic, OpenAI and Gemini APIs that retries what\n"
        "fails (classified, Retry-After honoured, a breaker per provider and model, one\n"
        "Idempotency-Key per request) and paces every request at its provider's rate limit,\n"
        "until Ctrl-C or SIGTERM.",
    ),
    Listed(
        name="demo",
        module="backstay.cli.demo",
        attr="demo",
        help="Run the demo: a fake provider having a stormy day, 30 tasks sitting it out.",
    ),
    Listed(
        name="config",
        module="backstay.cli.config",
        attr="app",
        help="Check and show backstay's configuration (backstay.yaml).",
        group=True,
    ),
    Listed(
        name="suite",
        module="backstay.cli.suite",
        attr="app",
        help="Check suites of agent tasks (see docs/suite.md).",
        group=True,
    ),
    Listed(
        name="escalations",
        module="backstay.cli.escalations",
        attr="app",
        help="The failures of a batch waiting for a human, and their decisions.",
        group=True,
    ),
    Listed(
        name="fake-provider",
        module="backstay.cli.fake_provider",
        attr="app",
        help="A local fake LLM provider (Anthropic, OpenAI, Gemini wire formats) with faults.",
        group=True,
    ),
    Listed(
        name="agents",
        module="backstay.cli.agents",
        attr="app",
        help="Install the agent CLIs at known-good versions, and see where each one stands.",
        group=True,
    ),
)


def load(listed: Listed) -> Any:
    """The command itself: its module imported, built as ``typer`` builds it."""
    found = getattr(importlib.import_module(listed.module), listed.attr)
    if listed.group:
        group = typer.main.get_group(found)
        group.name = listed.name
        return group
    one = typer.Typer(add_completion=False)
    if listed.provider_help:
        from backstay.cli._provider_env import ProviderHelpCommand  # noqa: PLC0415 - run, batch only

        one.command(listed.name, cls=ProviderHelpCommand)(found)
    else:
        one.command(listed.name)(found)
    return typer.main.get_command(one)


class _Placeholder(TyperCommand):
    """A command not loaded yet: its name and one-liner, for the root's help."""

    def __init__(self, listed: Listed) -> None:
        super().__init__(listed.name, help=listed.help)
        self.listed = listed


class LazyCommands(FaultGuard):
    """The root group: every command of :data:`COMMANDS` known by name and one-liner, its
    module imported on first use (not for the root's help), with ``FaultGuard``'s fault
    handling."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._listing = False
        for listed in COMMANDS:
            self.commands.setdefault(listed.name, _Placeholder(listed))

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        found = self.commands.get(cmd_name)
        if isinstance(found, _Placeholder) and not self._listing:
            found = self.commands[cmd_name] = load(found.listed)
        return found

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False
