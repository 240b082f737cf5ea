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
import glob
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Final

from backstay._checks import check_launcher
from backstay.adapters.capture import Capture
from backstay.adapters.cli.base import CliAdapter, Listeners, home_run_env
from backstay.adapters.cli.codex.events import EventReader, rollout_calls
from backstay.adapters.cli.codex.settings import (
    ACCOUNT_HEADERS,
    CONFIG_KEYS,
    CodexSettings,
    config_toml,
    tool_switches,
)
from backstay.adapters.cli.process import ProcessOutcome
from backstay.adapters.contract import AgentRequest
from backstay.adapters.gateway_wiring import GatewayWiring
from backstay.adapters.pricing import price_usage
from backstay.adapters.provider_env import OPENAI_ENV, ProviderEnv
from backstay.adapters.usage import Usage
from backstay.agents.locate import Located
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


@dataclasses.dataclass(slots=True)
class _Run:
    """One attempt's event reader, and the model calls its rollout counts (less those
    the rollouts of earlier attempts in a kept session home held: ``calls_before``)."""

    reader: EventReader
    calls: int | None = None
    calls_before: int = 0


class CodexAdapter(CliAdapter[CodexSettings, _Run]):
    """Runs the Codex CLI; see the module docstring."""

    name: ClassVar[str] = "codex"
    agent: ClassVar[str | None] = "codex"
    program: ClassVar[str] = "codex"
    config_keys: ClassVar[frozenset[str]] = CONFIG_KEYS
    provider_env: ClassVar[ProviderEnv] = PROVIDER_ENV
    # Through a gateway: config.toml names it, its stream timeout above the gateway's deadline.
    gateway_wiring: ClassVar[GatewayWiring | None] = GatewayWiring(
        provider="openai",
        key_env=OPENAI_ENV.credentials[:1],
        key_env_setting="api_key_env",
        base_url_env=OPENAI_ENV.endpoint[0],
        url_path="/v1",
        timeout_setting="stream_idle_timeout_s",
    )
    resumes_sessions: ClassVar[bool] = True

    def __init__(self, *, launcher: Sequence[str] = ()) -> None:
        """``launcher``: a command prefix for every run whose request names none (such as
        ``NetworkNamespace.launcher``); see ``backstay.adapters.cli.process``."""
        self.launcher = check_launcher(launcher, where="launcher")

    def parse(self, config: Mapping[str, Any]) -> CodexSettings:
        """The settings in ``config`` (``codex.settings``)."""
        return CodexSettings.from_config(config)

    def settings_for(self, request: AgentRequest) -> CodexSettings:
        """The settings, with the base URL of the request's environment when they name none."""
        return self.parse(request.config).with_endpoint(request.env)

    def check_ready(self, request: AgentRequest, settings: CodexSettings) -> Failure | None:
        """A tier naming tools codex lacks is a ``ConfigError``; no key in the request's
        environment is ``ERR_AUTH_MISSING_CREDENTIALS``."""
        tool_switches(request.tier)
        if request.env.get(settings.api_key_env):
            return None
        return Failure(
            code="ERR_AUTH_MISSING_CREDENTIALS",
            message=f"the request's env has no {settings.api_key_env} for codex",
            details={"agent": self.name, "source": "config"},
        )

    def command(self, request: AgentRequest, settings: CodexSettings, binary: Path) -> list[str]:
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

    def resume_command(
        self, request: AgentRequest, settings: CodexSettings, binary: Path, session_id: str
    ) -> list[str]:
        """``codex exec resume … SESSION_ID -``: the session continued, the plan's prompt
        on stdin."""
        first = self.command(request, settings, binary)
        return [first[0], "exec", "resume", *first[2:-1], session_id, "-"]

    def session_id(self, run: _Run) -> str | None:
        return run.reader.thread_id

    def session_turns(self, run: _Run) -> int:
        return run.reader.answers

    def has_session(self, home: Path, session_id: str) -> bool:
        """Whether the session's rollout is in ``home``:
        ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<session id>.jsonl``."""
        sessions = home / ".codex" / "sessions"
        return any(sessions.glob(f"**/rollout-*{glob.escape(session_id)}.jsonl"))

    def resume_refused(self, outcome: ProcessOutcome, run: _Run) -> bool:
        """Codex found no such session: it ends before a thread starts."""
        return run.reader.thread_id is None and outcome.exit_code != 0

    async def start(
        self, request: AgentRequest, settings: CodexSettings, cli: Located, capture: Capture
    ) -> _Run:
        return _Run(EventReader(capture.log))

    async def prepare_home(
        self,
        request: AgentRequest,
        settings: CodexSettings,
        cli: Located,
        run: _Run,
        *,
        folder: Path,
        capture: Capture,
    ) -> dict[str, str]:
        """The run's ``HOME`` is ``folder``, its ``CODEX_HOME`` holds ``config.toml``."""
        env = child_env(request.env, folder)
        codex_home = Path(env["CODEX_HOME"])
        codex_home.mkdir(exist_ok=True)  # a session home is kept across attempts
        run.calls_before = rollout_calls(codex_home) or 0
        (codex_home / "config.toml").write_text(
            config_toml(settings, request.tier), encoding="utf-8"
        )
        await capture.alog(f"codex {cli.version} ({cli.source}) in a private home {folder}")
        return env

    def listeners(self, run: _Run) -> Listeners:
        return Listeners(stdout=run.reader.line)

    async def collect(
        self, request: AgentRequest, run: _Run, folder: Path, capture: Capture
    ) -> None:
        """The model calls the run's rollout counts."""
        calls = rollout_calls(folder / ".codex")
        run.calls = None if calls is None else calls - run.calls_before

    async def usage(
        self, request: AgentRequest, settings: CodexSettings, run: _Run, capture: Capture
    ) -> Usage:
        """Tokens from ``turn.completed``, model calls from the rollout (else the turns),
        priced from ``prices`` or genai-prices."""
        reader = run.reader
        usage = reader.usage
        cost = price_usage(usage, model=request.model, provider="openai", prices=settings.prices)
        await capture.alog(f"codex cost: {cost.usd} ({cost.source})")
        return dataclasses.replace(
            usage,
            cost_usd=cost.usd,
            api_calls=run.calls if run.calls is not None else reader.turns,
        )

    def output(self, run: _Run, outcome: ProcessOutcome, *, failed: bool) -> str:
        return run.reader.answer
