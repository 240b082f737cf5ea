"""``ClaudeCodeAdapter``: one attempt is one non-interactive Claude Code run.

Command line (``claude`` 2.1.197)::

    claude -p --output-format stream-json --verbose --include-partial-messages
           --model MODEL --permission-mode bypassPermissions --no-session-persistence
           [--max-turns N] [--append-system-prompt S | --system-prompt S]
           [--tools A,B | --tools ""] [--disallowedTools Task]

with the prompt on stdin (``claude -p`` reads it there when no prompt argument is given;
never on the command line, where ``ps`` shows it to every local user), run in the
workspace under ``run_process`` (own process group, deadline
and stall kills). Partial messages make the stream print while the model streams, so a
run with neither output nor API traffic for ``stall_timeout_s`` is killed as stalled.

Each run gets a private ``HOME`` (and ``CLAUDE_CONFIG_DIR`` inside it) in a temporary
folder removed afterwards, and an environment built from nothing: ``PATH``, locale, the
run's folders, the update/telemetry switches, ``CLAUDE_CODE_MAX_RETRIES`` (0 by default,
so that backstay's policy owns every retry), the base URL, and from the request's
environment only ``ANTHROPIC_API_KEY``, ``ANTHROPIC_AUTH_TOKEN`` and the names in
``pass_env``. Settings: ``claude_code.settings``; the story in ``agent.log``:
``claude_code.stream``; classification: ``backstay.classify.agents.claude_code`` on the
final ``result`` object. Usage and cost come from that object (Claude's own client-side
estimate, unless ``prices`` names the model).
"""

from __future__ import annotations

import dataclasses
import glob
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Final

from backstay.adapters.capture import Capture
from backstay.adapters.cli.base import DEFAULT_PATH, CliAdapter, Listeners
from backstay.adapters.cli.claude_code._json import answer_of, usage_of
from backstay.adapters.cli.claude_code.settings import (
    CONFIG_KEYS,
    ClaudeCodeSettings,
    parse_settings,
)
from backstay.adapters.cli.claude_code.stream import ClaudeStream
from backstay.adapters.cli.process import ProcessOutcome
from backstay.adapters.contract import AgentRequest, TierConfig
from backstay.adapters.gateway_wiring import GatewayWiring
from backstay.adapters.pricing import Cost, price_usage
from backstay.adapters.provider_env import ANTHROPIC_ENV, ProviderEnv
from backstay.adapters.usage import Usage
from backstay.agents.home import private_home
from backstay.agents.locate import Located

__all__ = ["BASE_ENV", "ClaudeCodeAdapter"]

# What a run's environment takes from the request's besides keys: the program search path
# (tools run shell commands) and the locale.
BASE_ENV: Final = ("PATH", "LANG", "LC_ALL", "TZ")
KEY_ENV: Final = ANTHROPIC_ENV.credentials
BASE_URL_ENV: Final = ANTHROPIC_ENV.endpoint[0]
# Claude Code's tool that starts sub-agents: left out when a tier disables delegation.
DELEGATION_TOOL: Final = "Task"
# What Claude Code prints when the session to resume is not in its home.
RESUME_REFUSED: Final = "No conversation found with session ID"
_MODEL_PINS: Final = (
    "ANTHROPIC_DEFAULT_SONNET_MODEL",
    "ANTHROPIC_DEFAULT_OPUS_MODEL",
    "ANTHROPIC_DEFAULT_HAIKU_MODEL",
    "CLAUDE_CODE_SUBAGENT_MODEL",
)


def _tier_args(tier: TierConfig | None, settings: ClaudeCodeSettings) -> list[str]:
    if tier is None:
        return []
    args: list[str] = []
    if tier.system_prompt:
        flag = "--append-system-prompt"
        if settings.system_prompt_mode == "replace":
            flag = "--system-prompt"
        args += [flag, tier.system_prompt]
    if not tier.tools_enabled:
        args += ["--tools", ""]
    elif tier.allowed_tools is not None:
        args += ["--tools", ",".join(tier.allowed_tools)]
    if not tier.delegation_enabled:
        args += ["--disallowedTools", DELEGATION_TOOL]
    return args


class ClaudeCodeAdapter(CliAdapter[ClaudeCodeSettings, ClaudeStream]):
    """Runs Claude Code once per attempt; see the module docstring."""

    name: ClassVar[str] = "claude-code"
    agent: ClassVar[str | None] = "claude-code"
    program: ClassVar[str] = "claude-code"
    config_keys: ClassVar[frozenset[str]] = CONFIG_KEYS
    task_limits: ClassVar[Mapping[str, str]] = {"max_turns": "max_turns"}
    provider_env: ClassVar[ProviderEnv] = ANTHROPIC_ENV
    # Through a gateway: the token as the key, API_TIMEOUT_MS above the gateway's deadline.
    gateway_wiring: ClassVar[GatewayWiring | None] = GatewayWiring(
        provider="anthropic",
        key_env=KEY_ENV,
        base_url_env=BASE_URL_ENV,
        timeout_setting="api_timeout_s",
    )
    ignore_cleanup_errors: ClassVar[bool] = True
    resumes_sessions: ClassVar[bool] = True

    def parse(self, config: Mapping[str, Any]) -> ClaudeCodeSettings:
        """The settings in ``config`` (``claude_code.settings``)."""
        return parse_settings(config)

    def command(
        self, request: AgentRequest, settings: ClaudeCodeSettings, binary: Path
    ) -> list[str]:
        """The command line of one attempt (the prompt is not on it: ``prompt_stdin``)."""
        argv = [
            str(binary),
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--include-partial-messages",
            "--model",
            request.model,
            "--permission-mode",
            "bypassPermissions",
        ]
        if request.session is None:  # a session kept across attempts is saved in its home
            argv.append("--no-session-persistence")
        if settings.max_turns is not None:
            argv += ["--max-turns", str(settings.max_turns)]
        return argv + _tier_args(request.tier, settings)

    def resume_command(
        self, request: AgentRequest, settings: ClaudeCodeSettings, binary: Path, session_id: str
    ) -> list[str]:
        """``command`` continuing the saved session ``session_id`` (``--resume``)."""
        return [*self.command(request, settings, binary), "--resume", session_id]

    def session_id(self, run: ClaudeStream) -> str | None:
        return run.session_id

    def session_turns(self, run: ClaudeStream) -> int:
        return len(run.answers)

    def has_session(self, home: Path, session_id: str) -> bool:
        """Whether the session's transcript is in ``home``: Claude Code keeps it at
        ``$CLAUDE_CONFIG_DIR/projects/<workspace slug>/<session id>.jsonl``."""
        projects = home / "home" / ".claude" / "projects"
        return any(projects.glob(f"*/{glob.escape(session_id)}.jsonl"))

    def resume_refused(self, outcome: ProcessOutcome, run: ClaudeStream) -> bool:
        """The CLI found no such session: it says so and ends before the model answers."""
        said = f"{outcome.stdout_tail}\n{outcome.stderr_tail}"
        return not run.answers and RESUME_REFUSED in said

    def environment(
        self, request: AgentRequest, settings: ClaudeCodeSettings, cli: Located, home: Path
    ) -> dict[str, str]:
        """The whole environment of one attempt whose private ``HOME`` is ``home``."""
        given = request.env
        env = {name: given[name] for name in (*BASE_ENV, *settings.pass_env) if name in given}
        env.setdefault("PATH", DEFAULT_PATH)
        env |= private_home(home)
        env["CLAUDE_CONFIG_DIR"] = str(home / ".claude")
        env |= cli.offline_env
        env["CLAUDE_CODE_MAX_RETRIES"] = str(settings.cli_retries)
        if settings.api_timeout_s is not None:
            env["API_TIMEOUT_MS"] = str(round(settings.api_timeout_s * 1000))
        if os.geteuid() == 0:
            env["IS_SANDBOX"] = "1"  # bypassPermissions is refused to root otherwise
        for name in KEY_ENV:
            if given.get(name):
                env[name] = given[name]
        base_url = settings.base_url or given.get(BASE_URL_ENV)
        if base_url:
            env[BASE_URL_ENV] = base_url
            # Behind a gateway, side calls must not ask for models it may not know.
            env |= dict.fromkeys(_MODEL_PINS, request.model)
        return env

    async def start(
        self, request: AgentRequest, settings: ClaudeCodeSettings, cli: Located, capture: Capture
    ) -> ClaudeStream:
        await capture.alog(f"claude-code: {cli.path} {cli.version} ({cli.source})")
        return ClaudeStream(capture)

    async def prepare_home(
        self,
        request: AgentRequest,
        settings: ClaudeCodeSettings,
        cli: Located,
        run: ClaudeStream,
        *,
        folder: Path,
        capture: Capture,
    ) -> dict[str, str]:
        """Nothing written: the run's ``HOME`` is ``folder/home`` (``environment``)."""
        return self.environment(request, settings, cli, folder / "home")

    def run_launcher(self, request: AgentRequest, settings: ClaudeCodeSettings) -> tuple[str, ...]:
        """The request's launcher, then the settings' own."""
        return (*request.launcher, *settings.launcher)

    def listeners(self, run: ClaudeStream) -> Listeners:
        return Listeners(stdout=run.line)

    def evidence(self, outcome: ProcessOutcome, run: ClaudeStream) -> str:
        """The final ``result`` object, else all the CLI printed."""
        if run.result is not None:
            return json.dumps(run.result)
        return super().evidence(outcome, run)

    async def usage(
        self,
        request: AgentRequest,
        settings: ClaudeCodeSettings,
        run: ClaudeStream,
        capture: Capture,
    ) -> Usage:
        """The final ``result`` object's usage and cost (``_priced``); none without one."""
        if not run.result:
            return Usage()
        return await self._priced(usage_of(run.result), request, settings, capture)

    def output(self, run: ClaudeStream, outcome: ProcessOutcome, *, failed: bool) -> str:
        if run.result is not None:
            return answer_of(run.result)
        return outcome.stdout_tail if failed else ""

    @staticmethod
    async def _priced(
        usage: Usage, request: AgentRequest, settings: ClaudeCodeSettings, capture: Capture
    ) -> Usage:
        """``usage`` with its cost: a configured price, else Claude Code's own estimate,
        else genai-prices."""
        if request.model in settings.prices or usage.cost_usd is None:
            cost = price_usage(
                usage, model=request.model, provider="anthropic", prices=settings.prices
            )
        else:
            cost = Cost(usd=usage.cost_usd, source="Claude Code's own estimate")
        await capture.alog(f"cost: {cost.usd} USD ({cost.source})")
        return dataclasses.replace(usage, cost_usd=cost.usd)
