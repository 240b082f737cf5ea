"""``GeminiCliAdapter``: one attempt is one headless Gemini CLI run.

Command line (``gemini`` 0.61.0)::

    gemini --output-format stream-json --model MODEL --approval-mode yolo

with the prompt on stdin (not a terminal: the CLI runs headless and takes stdin as the
prompt; never on the command line, where ``ps`` shows it to every local user), run in
the workspace under ``run_process`` (own process group, deadline
and stall kills). The stream prints the assistant's text as it arrives, so a run with
neither output nor API traffic for ``stall_timeout_s`` is killed as stalled.

Each run gets a private ``HOME`` in a temporary folder removed afterwards, holding the
``.gemini/settings.json`` the adapter writes: API-key auth (without it a custom base URL
makes the CLI refuse to start, exit 41), usage statistics, telemetry and update checks
off, ``general.maxAttempts`` 1 + ``cli_retries`` (1 by default: backstay's policy owns
every retry), ``model.maxSessionTurns`` from ``max_turns``, and the tier's tools
(``tools.core``: the allowed built-in tools; none when tools are disabled). A tier's
system prompt goes into the global ``GEMINI.md`` (``append``) or a file named by
``GEMINI_SYSTEM_MD`` (``replace``). The environment is built from nothing: ``PATH``,
locale, the run's folders, ``GEMINI_CLI_TRUST_WORKSPACE=true`` (0.61 ignores yolo in an
untrusted folder), the base URL, and from the request's environment only
``GEMINI_API_KEY``, ``GOOGLE_API_KEY`` and the names in ``pass_env``. With
``request_timeout_s`` (set through a gateway: its deadline plus a margin), a preload script
in the run's ``HOME`` raises the CLI's request timeout (``fetch_timeouts``).

Sessions: a run through a backstay gateway (``backstay run`` / ``batch`` / ``resume`` by
default) keeps its ``HOME`` across the task's attempts, and a later attempt continues the
session with ``--resume <session id>`` (the id from the stream's ``init`` event; the
transcript ``.gemini/tmp/<project>/chats/session-<time>-<first 8 of the id>.jsonl``),
``continue`` on stdin. Only through the gateway: the resumed CLI answers its last tool
call twice, which Gemini refuses and the gateway repairs (``backstay.gateway.repair``);
straight to Gemini a rerun starts afresh in the restored workspace.

Classification: ``backstay.classify.agents.gemini_cli`` on stdout (the ``result`` and
``error`` events) and the exit code (the HTTP status modulo 256). Usage: the session
transcript (tokens and model calls), else the result's ``stats``; the CLI reports no
cost, so it is priced from ``prices`` or genai-prices.
"""

from __future__ import annotations

import dataclasses
import glob
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Final

from backstay.adapters.capture import Capture
from backstay.adapters.cli.base import DEFAULT_PATH, CliAdapter, Listeners
from backstay.adapters.cli.gemini_cli.fetch_timeouts import timeout_env
from backstay.adapters.cli.gemini_cli.settings import CONFIG_KEYS, GeminiCliSettings, parse_settings
from backstay.adapters.cli.gemini_cli.stream import (
    GeminiStream,
    result_usage,
    session_calls,
    session_usage,
)
from backstay.adapters.cli.process import ProcessOutcome
from backstay.adapters.contract import AgentRequest
from backstay.adapters.gateway_wiring import GatewayWiring, through_gateway
from backstay.adapters.pricing import price_usage
from backstay.adapters.provider_env import GEMINI_ENV, ProviderEnv
from backstay.adapters.usage import Usage
from backstay.agents.home import private_home
from backstay.agents.locate import Located

__all__ = ["GeminiCliAdapter", "run_settings"]

BASE_ENV: Final = ("PATH", "LANG", "LC_ALL", "TZ")
KEY_ENV: Final = GEMINI_ENV.credentials
BASE_URL_ENV: Final = GEMINI_ENV.endpoint[0]
SYSTEM_PROMPT_FILE: Final = "system.md"
# What the CLI prints when it cannot continue the session it was given (exit 42).
RESUME_REFUSED: Final = "Error resuming session:"
# Where a run's ``HOME`` is in its folder (a session home kept across attempts).
HOME_DIR: Final = "home"


def run_settings(request: AgentRequest, settings: GeminiCliSettings) -> dict[str, Any]:
    """The ``settings.json`` of one run."""
    written: dict[str, Any] = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {
            "disableAutoUpdate": True,
            "disableUpdateNag": True,
            "maxAttempts": 1 + settings.cli_retries,
        },
    }
    if settings.max_turns is not None:
        written["model"] = {"maxSessionTurns": settings.max_turns}
    tier = request.tier
    if tier is not None and not tier.tools_enabled:
        written["tools"] = {"core": []}
    elif tier is not None and tier.allowed_tools is not None:
        written["tools"] = {"core": list(tier.allowed_tools)}
    return written


@dataclasses.dataclass(slots=True)
class _Run:
    """One attempt's stream, and the usage its session transcript holds (the model calls
    of earlier attempts in a kept session home left out: ``calls_before``)."""

    stream: GeminiStream
    session: Usage | None = None
    calls_before: frozenset[str] = frozenset()


class GeminiCliAdapter(CliAdapter[GeminiCliSettings, _Run]):
    """Runs Gemini CLI once per attempt; see the module docstring."""

    name: ClassVar[str] = "gemini-cli"
    agent: ClassVar[str | None] = "gemini-cli"
    program: ClassVar[str] = "gemini-cli"
    config_keys: ClassVar[frozenset[str]] = CONFIG_KEYS
    task_limits: ClassVar[Mapping[str, str]] = {"max_turns": "max_turns"}
    provider_env: ClassVar[ProviderEnv] = GEMINI_ENV
    gateway_wiring: ClassVar[GatewayWiring | None] = GatewayWiring(
        provider="gemini",
        key_env=KEY_ENV,
        base_url_env=BASE_URL_ENV,
        timeout_setting="request_timeout_s",
    )
    ignore_cleanup_errors: ClassVar[bool] = True
    # Through the gateway only (``can_resume``).
    resumes_sessions: ClassVar[bool] = True

    def parse(self, config: Mapping[str, Any]) -> GeminiCliSettings:
        """The settings in ``config`` (``gemini_cli.settings``)."""
        return parse_settings(config)

    def command(
        self, request: AgentRequest, settings: GeminiCliSettings, binary: Path
    ) -> list[str]:
        """The command line of one attempt (the prompt is not on it: ``prompt_stdin``)."""
        return [
            str(binary),
            "--output-format",
            "stream-json",
            "--model",
            request.model,
            "--approval-mode",
            "yolo",
        ]

    def can_resume(self, request: AgentRequest) -> bool:
        """Only an attempt through the gateway, which repairs the resumed session's first
        request (``backstay.gateway.repair``): straight to Gemini it would be refused."""
        return through_gateway(self.gateway_wiring, request)

    def resume_command(
        self, request: AgentRequest, settings: GeminiCliSettings, binary: Path, session_id: str
    ) -> list[str]:
        """The command line with ``--resume SESSION_ID``; the plan's prompt on stdin."""
        return [*self.command(request, settings, binary), "--resume", session_id]

    def session_id(self, run: _Run) -> str | None:
        return run.stream.session_id

    def session_turns(self, run: _Run) -> int:
        return run.stream.answers

    def has_session(self, home: Path, session_id: str) -> bool:
        """Whether the session's transcript is in the session home ``home``: a
        ``session-*-<first 8 of the id>.jsonl`` whose first line names the whole id."""
        chats = home / HOME_DIR / ".gemini" / "tmp"
        for path in chats.glob(f"*/chats/session-*-{glob.escape(session_id[:8])}.jsonl"):
            try:
                with path.open(encoding="utf-8", errors="replace") as opened:
                    first = json.loads(opened.readline() or "null")
            except (OSError, ValueError):
                continue
            if isinstance(first, dict) and first.get("sessionId") == session_id:
                return True
        return False

    def resume_refused(self, outcome: ProcessOutcome, run: _Run) -> bool:
        """The CLI could not continue the session: it says so and ends before one starts."""
        said = f"{outcome.stdout_tail}\n{outcome.stderr_tail}"
        return run.stream.session_id is None and RESUME_REFUSED in said

    def write_home(
        self, request: AgentRequest, settings: GeminiCliSettings, home: Path
    ) -> dict[str, str]:
        """Write the run's ``HOME`` (settings, system prompt); the variables it needs."""
        env = private_home(home)
        folder = home / ".gemini"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "settings.json").write_text(
            json.dumps(run_settings(request, settings), indent=2), encoding="utf-8"
        )
        tier = request.tier
        if tier is not None and tier.system_prompt:
            if settings.system_prompt_mode == "replace":
                path = folder / SYSTEM_PROMPT_FILE
                path.write_text(tier.system_prompt, encoding="utf-8")
                env["GEMINI_SYSTEM_MD"] = str(path)
            else:
                (folder / "GEMINI.md").write_text(tier.system_prompt, encoding="utf-8")
        if settings.request_timeout_s is not None:
            passed = {n: request.env[n] for n in settings.pass_env if n in request.env}
            env |= timeout_env(folder, settings.request_timeout_s, passed)
        return env

    def environment(
        self,
        request: AgentRequest,
        settings: GeminiCliSettings,
        cli: Located,
        home_env: Mapping[str, str],
    ) -> dict[str, str]:
        """The whole environment of one attempt (``home_env`` from ``write_home``)."""
        given = request.env
        env = {name: given[name] for name in (*BASE_ENV, *settings.pass_env) if name in given}
        env.setdefault("PATH", DEFAULT_PATH)
        env |= home_env
        env |= cli.offline_env
        env["GEMINI_CLI_TRUST_WORKSPACE"] = "true"
        env["NO_COLOR"] = "1"
        for name in KEY_ENV:
            if given.get(name):
                env[name] = given[name]
        base_url = settings.base_url or given.get(BASE_URL_ENV)
        if base_url:
            env[BASE_URL_ENV] = base_url
        return env

    async def start(
        self, request: AgentRequest, settings: GeminiCliSettings, cli: Located, capture: Capture
    ) -> _Run:
        await capture.alog(f"gemini-cli: {cli.path} {cli.version} ({cli.source})")
        return _Run(GeminiStream(capture))

    async def prepare_home(
        self,
        request: AgentRequest,
        settings: GeminiCliSettings,
        cli: Located,
        run: _Run,
        *,
        folder: Path,
        capture: Capture,
    ) -> dict[str, str]:
        """The run's ``HOME`` is ``folder/home`` (``write_home``)."""
        home = folder / HOME_DIR
        run.calls_before = session_calls(home)  # a kept session home: earlier attempts'
        env = self.environment(request, settings, cli, self.write_home(request, settings, home))
        await capture.alog(
            f"settings.json: {json.dumps(run_settings(request, settings), sort_keys=True)}"
        )
        return env

    def run_launcher(self, request: AgentRequest, settings: GeminiCliSettings) -> tuple[str, ...]:
        """The request's launcher, then the settings' own."""
        return (*request.launcher, *settings.launcher)

    def listeners(self, run: _Run) -> Listeners:
        return Listeners(stdout=run.stream.line)

    async def collect(
        self, request: AgentRequest, run: _Run, folder: Path, capture: Capture
    ) -> None:
        """The stream's last line, and the usage in the session transcript."""
        run.stream.flush()
        run.session = session_usage(folder / HOME_DIR, before=run.calls_before)

    async def usage(
        self, request: AgentRequest, settings: GeminiCliSettings, run: _Run, capture: Capture
    ) -> Usage:
        """The session transcript's usage, else the result's ``stats``; priced."""
        usage = run.session
        if usage is None and run.stream.result is not None:
            usage = result_usage(run.stream.result)
        return await self._priced(usage or Usage(), request, settings, capture)

    def evidence(self, outcome: ProcessOutcome, run: _Run) -> str:
        """With a result event, stdout; stderr holds the CLI's own retry chatter and stack
        traces. Without one, what it printed anywhere."""
        if run.stream.result is None:
            return super().evidence(outcome, run)
        return outcome.stdout_tail

    def output(self, run: _Run, outcome: ProcessOutcome, *, failed: bool) -> str:
        return run.stream.answer

    @staticmethod
    async def _priced(
        usage: Usage, request: AgentRequest, settings: GeminiCliSettings, capture: Capture
    ) -> Usage:
        """``usage`` with its cost: a configured price, else genai-prices, else unknown."""
        cost = price_usage(usage, model=request.model, provider="google", prices=settings.prices)
        await capture.alog(f"cost: {cost.usd} USD ({cost.source})")
        return dataclasses.replace(usage, cost_usd=cost.usd)
