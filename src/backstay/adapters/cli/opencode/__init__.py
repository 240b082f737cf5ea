"""``OpencodeAdapter``: one ``opencode run`` per attempt (registry name ``opencode``).

Command line: ``opencode run --format json --print-logs --log-level INFO --auto --title
backstay -m openai/MODEL`` in the workspace, the prompt on stdin (``run`` reads a stdin
that is not a terminal as its message; never on the command line, where ``ps`` shows it
to every local user), with a fresh private
``HOME`` (XDG directories inside) per attempt, ``OPENCODE_CONFIG_CONTENT`` from
``opencode.settings`` and the catalogue's offline switches. ``--title`` spares the extra
title-generation call; ``--auto`` approves tool permissions (the tier's ``permission``
rules decide what is allowed); ``--print-logs`` puts opencode's log on stderr, where each
model call shows (activity for the stall limit) and a failed one is announced.

opencode retries 429s, 5xx and connection errors by itself, with no setting to turn that
off. The adapter therefore stops the run once a model call has failed
(``opencode.events.ErrorWatch``): at once when opencode reports an ``error`` event,
else after ``error_grace_s``. The failure is classified from opencode's ``error`` event
(``error.name``, ``data.statusCode``, headers and body: ``backstay.classify.agents.opencode``)
or, when it was retrying, from the logged error text; backstay's policy then decides.
Usage and opencode's own cost come from its ``step_finish`` events (one per model call).
See docs/agents/opencode.md.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Final

from backstay._checks import check_launcher
from backstay.adapters.capture import Capture
from backstay.adapters.cli.base import CliAdapter, Listeners, home_run_env
from backstay.adapters.cli.opencode.events import ErrorWatch, EventReader
from backstay.adapters.cli.opencode.settings import (
    CONFIG_KEYS,
    PROVIDER_ID,
    OpencodeSettings,
    config_content,
)
from backstay.adapters.cli.process import ProcessOutcome
from backstay.adapters.contract import AgentRequest
from backstay.adapters.gateway_wiring import GatewayWiring
from backstay.adapters.pricing import price_usage
from backstay.adapters.provider_env import OPENAI_ENV, ProviderEnv
from backstay.adapters.usage import Usage
from backstay.agents.locate import Located
from backstay.failure import Failure

__all__ = ["OpencodeAdapter"]

SESSION_TITLE: Final = "backstay"
# opencode's OpenAI provider; its configuration names the base URL, so the variable is
# written there (a base_url setting wins).
PROVIDER_ENV: Final = ProviderEnv(
    credentials=OPENAI_ENV.credentials,
    endpoint=OPENAI_ENV.endpoint,
    translated=OPENAI_ENV.endpoint,
)
_OWNED_PREFIXES: Final = ("OPENCODE_", "XDG_")
_OWNED: Final = frozenset({"HOME", "TMPDIR", "CLAUDECODE"})


def child_env(
    request_env: Mapping[str, str], home: Path, offline: Mapping[str, str], content: str
) -> dict[str, str]:
    """The request's environment with the run's private home, opencode's offline
    switches and its configuration in place of anything the caller set for them."""
    env = home_run_env(request_env, home, owned=_OWNED, owned_prefixes=_OWNED_PREFIXES)
    env |= offline
    env["OPENCODE_CONFIG_CONTENT"] = content
    return env


@dataclasses.dataclass(frozen=True, slots=True)
class _Run:
    """One attempt's watch on opencode's log, and its event reader."""

    watch: ErrorWatch
    reader: EventReader


class OpencodeAdapter(CliAdapter[OpencodeSettings, _Run]):
    """Runs opencode; see the module docstring."""

    name: ClassVar[str] = "opencode"
    agent: ClassVar[str | None] = "opencode"
    program: ClassVar[str] = "opencode"
    config_keys: ClassVar[frozenset[str]] = CONFIG_KEYS
    task_limits: ClassVar[Mapping[str, str]] = {"max_turns": "max_turns"}
    provider_env: ClassVar[ProviderEnv] = PROVIDER_ENV
    gateway_wiring: ClassVar[GatewayWiring | None] = GatewayWiring(
        provider="openai",
        key_env=OPENAI_ENV.credentials[:1],
        key_env_setting="api_key_env",
        base_url_env=OPENAI_ENV.endpoint[0],
        url_path="/v1",
        timeout_setting="request_timeout_s",
    )

    def __init__(self, *, launcher: Sequence[str] = ()) -> None:
        """``launcher``: a command prefix for every run whose request names none (such as
        ``NetworkNamespace.launcher``); see ``backstay.adapters.cli.process``."""
        self.launcher = check_launcher(launcher, where="launcher")

    def parse(self, config: Mapping[str, Any]) -> OpencodeSettings:
        """The settings in ``config`` (``opencode.settings``)."""
        return OpencodeSettings.from_config(config)

    def settings_for(self, request: AgentRequest) -> OpencodeSettings:
        """The settings, with the base URL of the request's environment when they name none."""
        return self.parse(request.config).with_endpoint(request.env)

    def check_ready(self, request: AgentRequest, settings: OpencodeSettings) -> Failure | None:
        """No key in the request's environment is ``ERR_AUTH_MISSING_CREDENTIALS``."""
        if request.env.get(settings.api_key_env):
            return None
        return Failure(
            code="ERR_AUTH_MISSING_CREDENTIALS",
            message=f"the request's env has no {settings.api_key_env} for opencode",
            details={"agent": self.name, "source": "config"},
        )

    def command(self, request: AgentRequest, settings: OpencodeSettings, binary: Path) -> list[str]:
        """The command line of one attempt (the prompt is not on it: ``prompt_stdin``)."""
        return [
            str(binary),
            "run",
            "--format",
            "json",
            "--print-logs",
            "--log-level",
            "INFO",
            "--auto",
            "--title",
            SESSION_TITLE,
            "-m",
            f"{PROVIDER_ID}/{request.model}",
        ]

    async def start(
        self, request: AgentRequest, settings: OpencodeSettings, cli: Located, capture: Capture
    ) -> _Run:
        watch = ErrorWatch(settings.error_grace_s, capture.log)
        return _Run(watch, EventReader(capture.log, watch.now))

    async def prepare_home(
        self,
        request: AgentRequest,
        settings: OpencodeSettings,
        cli: Located,
        run: _Run,
        *,
        folder: Path,
        capture: Capture,
    ) -> dict[str, str]:
        """The run's ``HOME`` is ``folder``; its configuration goes in the environment."""
        content = config_content(settings, request.model, request.tier)
        env = child_env(request.env, folder, cli.offline_env, content)
        await capture.alog(f"opencode {cli.version} ({cli.source}) in a private home {folder}")
        return env

    def listeners(self, run: _Run) -> Listeners:
        return Listeners(
            stdout=run.reader.line,
            stderr=run.watch.line,
            stop=run.watch.stop,
            ended=run.watch.cancel,
        )

    def evidence(self, outcome: ProcessOutcome, run: _Run) -> str:
        """All opencode printed; when it was stopped while retrying on its own, its
        logged error."""
        if outcome.stopped and not run.reader.errors and run.watch.error is not None:
            logged = {
                "type": "error",
                "error": {"name": "APIError", "data": {"message": run.watch.error}},
            }
            return json.dumps(logged)
        return super().evidence(outcome, run)

    async def usage(
        self, request: AgentRequest, settings: OpencodeSettings, run: _Run, capture: Capture
    ) -> Usage:
        """The ``step_finish`` events' usage and cost; priced here when they have none."""
        usage = run.reader.usage
        if usage.cost_usd or not usage.tokens_total:
            return usage
        cost = price_usage(usage, model=request.model, provider="openai", prices=settings.prices)
        return dataclasses.replace(usage, cost_usd=cost.usd)

    def output(self, run: _Run, outcome: ProcessOutcome, *, failed: bool) -> str:
        return run.reader.answer
