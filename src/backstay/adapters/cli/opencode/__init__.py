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
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Final

from backstay._checks import check_launcher
from backstay.adapters.base import BaseAdapter
from backstay.adapters.capture import Capture
from backstay.adapters.cli.base import home_run_env, prompt_stdin
from backstay.adapters.cli.opencode.events import ErrorWatch, EventReader
from backstay.adapters.cli.opencode.settings import (
    CONFIG_KEYS,
    PROVIDER_ID,
    OpencodeSettings,
    config_content,
)
from backstay.adapters.cli.process import ProcessOutcome, run_process
from backstay.adapters.contract import AgentRequest, AgentResult, AgentStatus
from backstay.adapters.pricing import price_usage
from backstay.adapters.provider_env import OPENAI_ENV, ProviderEnv
from backstay.adapters.usage import Usage
from backstay.agents.locate import Located, locate
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


class OpencodeAdapter(BaseAdapter):
    """Runs opencode; see the module docstring."""

    name: ClassVar[str] = "opencode"
    agent: ClassVar[str | None] = "opencode"
    config_keys: ClassVar[frozenset[str]] = CONFIG_KEYS
    task_limits: ClassVar[Mapping[str, str]] = {"max_turns": "max_turns"}
    provider_env: ClassVar[ProviderEnv] = PROVIDER_ENV

    def __init__(self, *, launcher: Sequence[str] = ()) -> None:
        """``launcher``: a command prefix for every run whose request names none (such as
        ``NetworkNamespace.launcher``); see ``backstay.adapters.cli.process``."""
        self.launcher = check_launcher(launcher, where="launcher")

    def validate_config(self, config: Mapping[str, Any]) -> bool:
        """Unknown keys, bad values, and a missing or unsupported ``opencode`` binary (the
        error says how to install one) are ``ConfigError``."""
        super().validate_config(config)
        self.locate(OpencodeSettings.from_config(config))
        return True

    @staticmethod
    def locate(settings: OpencodeSettings) -> Located:
        """The ``opencode`` binary the settings name, at a supported version."""
        return locate("opencode", settings.binary, where="config.binary")

    @staticmethod
    def command(binary: Path, request: AgentRequest) -> list[str]:
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

    def _failure(
        self, outcome: ProcessOutcome, request: AgentRequest, reader: EventReader, watch: ErrorWatch
    ) -> Failure | None:
        evidence = f"{outcome.stdout_tail}\n{outcome.stderr_tail}".strip()
        if outcome.stopped and not reader.errors and watch.error is not None:
            # opencode was retrying on its own: its logged error is the evidence.
            logged = {
                "type": "error",
                "error": {"name": "APIError", "data": {"message": watch.error}},
            }
            evidence = json.dumps(logged)
        return self.process_failure(outcome, request, evidence=evidence)

    def _usage(
        self, reader: EventReader, request: AgentRequest, settings: OpencodeSettings
    ) -> Usage:
        usage = reader.usage
        if usage.cost_usd or not usage.tokens_total:
            return usage
        cost = price_usage(usage, model=request.model, provider="openai", prices=settings.prices)
        return dataclasses.replace(usage, cost_usd=cost.usd)

    async def execute(
        self, request: AgentRequest, *, operation_id: str, attempt_id: str, capture: Capture
    ) -> AgentResult:
        settings = OpencodeSettings.from_config(request.config).with_endpoint(request.env)
        cli = self.locate(settings)
        if not request.env.get(settings.api_key_env):
            missing = Failure(
                code="ERR_AUTH_MISSING_CREDENTIALS",
                message=f"the request's env has no {settings.api_key_env} for opencode",
                details={"agent": self.name, "source": "config"},
            )
            return AgentResult.failed(missing)
        argv = self.command(cli.path, request)
        prompt = prompt_stdin(request)
        content = config_content(settings, request.model, request.tier)
        watch = ErrorWatch(settings.error_grace_s, capture.log)
        reader = EventReader(capture.log, watch.now)
        with tempfile.TemporaryDirectory(prefix="backstay-opencode-") as folder:
            home = Path(folder)
            env = child_env(request.env, home, cli.offline_env, content)
            await capture.alog(f"opencode {cli.version} ({cli.source}) in a private home {home}")
            try:
                outcome = await run_process(
                    argv,
                    cwd=request.workspace,
                    env=env,
                    timeout_s=request.timeout_s,
                    stall_timeout_s=request.stall_timeout_s,
                    capture=capture,
                    on_stdout_line=reader.line,
                    on_stderr_line=watch.line,
                    stop=watch.stop,
                    launcher=request.launcher or self.launcher,
                    stdin_text=prompt,
                )
            finally:
                watch.cancel()
        usage = self._usage(reader, request, settings)
        failure = self._failure(outcome, request, reader, watch)
        if failure is not None:
            return AgentResult.failed(
                failure,
                output=reader.answer,
                usage=usage,
                exit_code=outcome.exit_code,
                duration_s=outcome.duration_s,
            )
        return AgentResult(
            status=AgentStatus.SUCCEEDED,
            output=reader.answer,
            usage=usage,
            exit_code=outcome.exit_code,
            duration_s=outcome.duration_s,
        )
