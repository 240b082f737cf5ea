"""``CodexAdapter``: one ``codex exec`` run per attempt (registry name ``codex``).

Command line: ``codex exec --json --strict-config --skip-git-repo-check
--dangerously-bypass-approvals-and-sandbox -m MODEL -`` in the workspace, the prompt on
stdin (``-``: Codex reads its instructions there; never on the command line, where
``ps`` shows it to every local user), with a fresh private ``HOME`` and ``CODEX_HOME``
per attempt whose ``config.toml`` (``codex.settings``) points Codex at ``base_url`` —
else the ``OPENAI_BASE_URL`` of the request's environment, which Codex itself ignores —
with its own retries off. The child's environment is the request's ``env`` with the
run's home directories put in its place (and ``CODEX_*`` / ``OPENAI_BASE_URL`` dropped:
the config file decides them); the key is read by Codex from the ``api_key_env``
variable of that environment.

Failures are classified from the JSON events first (``turn.failed``, ``error``: see
``backstay.classify.agents.codex``), then the text Codex printed outside them; a kill at
the deadline or stall limit is a timeout. Usage comes from ``turn.completed`` (tokens) and
the run's rollout (model calls); the cost from configured prices or genai-prices, since
Codex reports none. See docs/agents/codex.md.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Final

from backstay._checks import check_launcher
from backstay.adapters.base import BaseAdapter
from backstay.adapters.capture import Capture
from backstay.adapters.cli.base import home_run_env, prompt_stdin
from backstay.adapters.cli.codex.events import EventReader, rollout_calls
from backstay.adapters.cli.codex.settings import (
    ACCOUNT_HEADERS,
    CONFIG_KEYS,
    CodexSettings,
    config_toml,
    tool_switches,
)
from backstay.adapters.cli.process import run_process
from backstay.adapters.contract import AgentRequest, AgentResult, AgentStatus
from backstay.adapters.pricing import price_usage
from backstay.adapters.provider_env import OPENAI_ENV, ProviderEnv
from backstay.agents.locate import Located, locate
from backstay.failure import Failure

__all__ = ["CodexAdapter"]

# Codex's own names for the account variables; OPENAI_BASE_URL goes into config.toml.
PROVIDER_ENV: Final = ProviderEnv(
    credentials=OPENAI_ENV.credentials,
    endpoint=OPENAI_ENV.endpoint,
    account=tuple(ACCOUNT_HEADERS.values()),
    translated=OPENAI_ENV.endpoint,
)

# Variables of the request's env that would override what the run's config.toml says.
_OWNED_PREFIXES: Final = ("CODEX_", "XDG_")
_OWNED: Final = frozenset({"HOME", "TMPDIR", "OPENAI_BASE_URL", "CLAUDECODE"})


def child_env(request_env: Mapping[str, str], home: Path) -> dict[str, str]:
    """The request's environment with the run's private home in place of the caller's."""
    env = home_run_env(request_env, home, owned=_OWNED, owned_prefixes=_OWNED_PREFIXES)
    env["CODEX_HOME"] = str(home / ".codex")
    return env


class CodexAdapter(BaseAdapter):
    """Runs the Codex CLI; see the module docstring."""

    name: ClassVar[str] = "codex"
    agent: ClassVar[str | None] = "codex"
    config_keys: ClassVar[frozenset[str]] = CONFIG_KEYS
    provider_env: ClassVar[ProviderEnv] = PROVIDER_ENV

    def __init__(self, *, launcher: Sequence[str] = ()) -> None:
        """``launcher``: a command prefix for every run whose request names none (such as
        ``NetworkNamespace.launcher``); see ``backstay.adapters.cli.process``."""
        self.launcher = check_launcher(launcher, where="launcher")

    def validate_config(self, config: Mapping[str, Any]) -> bool:
        """Unknown keys, bad values, and a missing or unsupported ``codex`` binary (the
        error says how to install one) are ``ConfigError``."""
        super().validate_config(config)
        self.locate(CodexSettings.from_config(config))
        return True

    @staticmethod
    def locate(settings: CodexSettings) -> Located:
        """The ``codex`` binary the settings name, at a supported version."""
        return locate("codex", settings.binary, where="config.binary")

    @staticmethod
    def command(binary: Path, request: AgentRequest) -> list[str]:
        """The command line of one attempt: ``-`` in place of the prompt, which Codex then
        reads on stdin (``prompt_stdin``)."""
        return [
            str(binary),
            "exec",
            "--json",
            "--strict-config",
            "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox",
            "-m",
            request.model,
            "-",
        ]

    async def execute(
        self, request: AgentRequest, *, operation_id: str, attempt_id: str, capture: Capture
    ) -> AgentResult:
        settings = CodexSettings.from_config(request.config).with_endpoint(request.env)
        cli = self.locate(settings)
        tool_switches(request.tier)  # a tier naming tools codex lacks fails before running
        if not request.env.get(settings.api_key_env):
            missing = Failure(
                code="ERR_AUTH_MISSING_CREDENTIALS",
                message=f"the request's env has no {settings.api_key_env} for codex",
                details={"agent": self.name, "source": "config"},
            )
            return AgentResult.failed(missing)
        argv = self.command(cli.path, request)
        prompt = prompt_stdin(request)
        with tempfile.TemporaryDirectory(prefix="backstay-codex-") as folder:
            home = Path(folder)
            env = child_env(request.env, home)
            codex_home = Path(env["CODEX_HOME"])
            codex_home.mkdir()
            (codex_home / "config.toml").write_text(
                config_toml(settings, request.tier), encoding="utf-8"
            )
            await capture.alog(f"codex {cli.version} ({cli.source}) in a private home {home}")
            reader = EventReader(capture.log)
            outcome = await run_process(
                argv,
                cwd=request.workspace,
                env=env,
                timeout_s=request.timeout_s,
                stall_timeout_s=request.stall_timeout_s,
                capture=capture,
                on_stdout_line=reader.line,
                launcher=request.launcher or self.launcher,
                stdin_text=prompt,
            )
            calls = rollout_calls(codex_home)
        usage = reader.usage
        cost = price_usage(usage, model=request.model, provider="openai", prices=settings.prices)
        await capture.alog(f"codex cost: {cost.usd} ({cost.source})")
        usage = dataclasses.replace(
            usage, cost_usd=cost.usd, api_calls=calls if calls is not None else reader.turns
        )
        evidence = f"{outcome.stdout_tail}\n{outcome.stderr_tail}".strip()
        failure = self.process_failure(outcome, request, evidence=evidence)
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
