"""``AiderAdapter``: one non-interactive Aider run (``aider --message-file …``) per attempt.

Aider exits 0 whatever happens, so an attempt is judged by what it printed and logged:
the last ``litellm.<Error>`` not followed by an answer, or a context-window exhaustion,
classified by ``backstay.classify`` (agent ``aider``); an answer (a ``message_send``
analytics event) and Aider's own "Completed --message-file" ending for success.

Aider retries failed calls on its own, with no setting to turn that off: 9 tries, 0.25 s
doubling to 32 s, ``retry-after`` ignored. The adapter makes each of those tries a single
HTTP call (the SDK's own retries are set to 0 through Aider's model settings), watches
for Aider's "Retrying in N seconds..." line, and stops the run once Aider announces more
retries than ``internal_retries`` allows (0 by default): the attempt then fails with the
error Aider printed, and backstay's policy — not Aider's fixed schedule — decides whether
and when to try again. Every call Aider made, retried or not, counts in ``api_calls``.

Deadline and stall limits kill Aider's whole process group (exit 124). Aider notices
neither a hung nor a stalled connection for 10 minutes (litellm's timeout), and prints
nothing while a whole (non-streamed) reply is on its way: a stall limit must be longer
than the slowest reply. Settings: ``backstay.adapters.cli.aider.settings``; the command line
and environment: ``backstay.adapters.cli.aider.command``; docs: ``docs/agents/aider.md``.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Final

from backstay._checks import check_launcher
from backstay.adapters.capture import Capture, Stream
from backstay.adapters.cli.aider.command import (
    AiderFiles,
    command,
    environment,
    prepare,
    tools_on,
)
from backstay.adapters.cli.aider.output import AiderReport, LineWatch, read_report
from backstay.adapters.cli.aider.providers import ANTHROPIC, GATEWAY_WIRING, GEMINI, OPENAI
from backstay.adapters.cli.aider.settings import CONFIG_KEYS, AiderSettings, parse_settings
from backstay.adapters.cli.base import CliAdapter, Listeners
from backstay.adapters.cli.process import ProcessOutcome
from backstay.adapters.contract import AgentRequest
from backstay.adapters.gateway_wiring import GatewayWiring
from backstay.adapters.pricing import price_usage
from backstay.adapters.provider_env import ProviderEnv
from backstay.adapters.usage import Usage
from backstay.agents import Located
from backstay.failure import Failure

__all__ = ["AiderAdapter"]

# What litellm reads for the providers Aider is used with here (``openai/…``,
# ``anthropic/…``, ``gemini/…``; ``providers``); ``OPENAI_API_BASE`` is Aider's own name
# for the base URL, ``OPENAI_ORGANIZATION`` litellm's for the organization.
PROVIDER_ENV: Final = ProviderEnv(
    credentials=(*OPENAI.keys, *ANTHROPIC.keys, GEMINI.keys[0]),
    endpoint=(*OPENAI.base_urls, *ANTHROPIC.base_urls, *GEMINI.base_urls),
    account=("OPENAI_ORGANIZATION",),
)

CLI_NAME: Final = "aider"
# litellm's provider prefix → the provider genai-prices knows it as.
_PRICE_PROVIDERS: Final = {"gemini": "google", "vertex_ai": "google"}


def _price_provider(model: str) -> tuple[str, str]:
    """The provider and bare model name to price ``model`` (litellm's naming) under."""
    prefix, slash, bare = model.partition("/")
    if slash:
        return _PRICE_PROVIDERS.get(prefix, prefix), bare
    if model.startswith("claude"):
        return "anthropic", model
    if model.startswith("gemini"):
        return "google", model
    return "openai", model


def _edited(workspace: Path, names: Sequence[str]) -> tuple[Path, ...]:
    """The files Aider said it edited that exist inside the workspace."""
    root = workspace.resolve()
    found = []
    for name in names:
        path = (root / name).resolve()
        if path.is_relative_to(root) and path.is_file():
            found.append(path)
    return tuple(found)


@dataclasses.dataclass(slots=True)
class _Run:
    """One attempt: its prompt, the watch on Aider's output, the run's files once written
    and the report read from them once it has ended."""

    prompt: str
    watch: LineWatch
    files: AiderFiles | None = None
    report: AiderReport | None = None

    @property
    def written(self) -> AiderFiles:
        if self.files is None:
            raise RuntimeError("the private home is written first")
        return self.files

    @property
    def read(self) -> AiderReport:
        if self.report is None:
            raise RuntimeError("the report is read once the run has ended")
        return self.report


class AiderAdapter(CliAdapter[AiderSettings, _Run]):
    """Runs Aider once per attempt; see the module docstring.

    ``launcher`` is a command prefix used when a request carries none of its own
    (``AgentRequest.launcher``): the engine builds requests without one, so a harness
    that runs Aider in a network namespace gives it here.
    """

    name: ClassVar[str] = "aider"
    agent: ClassVar[str | None] = "aider"
    program: ClassVar[str] = CLI_NAME
    config_keys: ClassVar[frozenset[str]] = CONFIG_KEYS
    provider_env: ClassVar[ProviderEnv] = PROVIDER_ENV
    # Through a gateway: an ``openai/…``, ``anthropic/…`` or ``gemini/…`` model
    # (``providers``); others go straight.
    gateway_wiring: ClassVar[GatewayWiring | None] = GATEWAY_WIRING

    def __init__(self, *, launcher: Sequence[str] = ()) -> None:
        self.launcher = check_launcher(launcher, where="launcher")

    def parse(self, config: Mapping[str, Any]) -> AiderSettings:
        """The settings in ``config`` (``aider.settings``)."""
        return parse_settings(config)

    async def start(
        self, request: AgentRequest, settings: AiderSettings, cli: Located, capture: Capture
    ) -> _Run:
        prompt = request.read_prompt()
        await self._note_tier(request, capture)
        watch = LineWatch(allowed_retries=settings.internal_retries, stop=asyncio.Event())
        return _Run(prompt, watch)

    async def prepare_home(
        self,
        request: AgentRequest,
        settings: AiderSettings,
        cli: Located,
        run: _Run,
        *,
        folder: Path,
        capture: Capture,
    ) -> dict[str, str]:
        """The run's files in ``folder`` (``aider.command``), the prompt in its message file."""
        files = run.files = AiderFiles(folder)
        prepare(files, cli, request, run.prompt)
        await capture.alog(
            f"aider {cli.version} ({cli.source}: {cli.path}); "
            f"private HOME {files.home}; internal retries allowed: "
            f"{settings.internal_retries}"
        )
        return environment(files, cli, request, settings)

    def argv(
        self, request: AgentRequest, settings: AiderSettings, cli: Located, run: _Run
    ) -> list[str]:
        """The command line names the run's files: ``aider.command``."""
        return command(cli.path, run.written, request, settings)

    def stdin(self, request: AgentRequest, run: _Run) -> str | None:
        """Nothing: Aider reads the prompt from its private message file."""
        return None

    def listeners(self, run: _Run) -> Listeners:
        return Listeners(stdout=run.watch.line, stop=run.watch.stop)

    async def collect(
        self, request: AgentRequest, run: _Run, folder: Path, capture: Capture
    ) -> None:
        """What Aider logged, and its chat transcript into ``agent.log``."""
        run.report = read_report(run.written, run.watch)
        await self._log_transcript(run.written, capture)

    async def usage(
        self, request: AgentRequest, settings: AiderSettings, run: _Run, capture: Capture
    ) -> Usage:
        await self._log_calls(run.read, run.watch, capture)
        return self._usage(run.read, request, settings, capture)

    def failure(self, outcome: ProcessOutcome, request: AgentRequest, run: _Run) -> Failure | None:
        return self._failure(outcome, request, run.read)

    def output(self, run: _Run, outcome: ProcessOutcome, *, failed: bool) -> str:
        if failed:
            return run.read.reply or outcome.stdout_tail
        return run.read.reply

    def artefacts(self, request: AgentRequest, run: _Run) -> tuple[Path, ...]:
        """The files Aider said it edited that exist inside the workspace."""
        return _edited(request.workspace, run.watch.edited)

    def _failure(
        self, outcome: ProcessOutcome, request: AgentRequest, report: AiderReport
    ) -> Failure | None:
        """Killed first; then Aider ending before any request; then what its output
        shows; then an ending without an answer."""
        details = {"agent": CLI_NAME, "exit_code": outcome.exit_code}
        if outcome.timed_out or outcome.stalled:
            return self.process_failure(outcome, request, evidence=outcome.stdout_tail)
        if report.api_calls == 0 and report.answers == 0:
            said = [line for line in outcome.stderr_tail.splitlines() if line.strip()]
            why = said[-1].strip() if said else report.exit_reason or "no reason given"
            return Failure(
                code="ERR_AGENT_CONFIG",
                message=f"aider exited {outcome.exit_code} before any request: {why}",
                details=details,
            )
        failure = self.process_failure(outcome, request, evidence=outcome.stdout_tail)
        if failure is not None or (report.answers and report.completed and not outcome.stopped):
            return failure
        why = report.exception or (
            "without an answer" if report.answers == 0 else "without finishing its message"
        )
        return Failure(
            code="ERR_AGENT_FAILED",
            message=f"aider exited {outcome.exit_code} {why}",
            details=details,
        )

    @staticmethod
    def _usage(
        report: AiderReport, request: AgentRequest, settings: AiderSettings, capture: Capture
    ) -> Usage:
        usage = Usage(
            input_tokens=report.prompt_tokens,
            output_tokens=report.completion_tokens,
            api_calls=report.api_calls,
            cost_usd=report.cost_usd,
        )
        if report.cost_usd is not None or report.answers == 0:
            if report.cost_usd is not None:
                capture.log(f"cost ${report.cost_usd:.6g}, as aider reported it")
            return usage
        configured = settings.prices.get(request.model)
        cost: float | None
        if configured is not None:
            cost, source = configured.cost(usage), "the adapter's prices setting"
        else:
            provider, bare = _price_provider(request.model)
            priced = price_usage(usage, model=bare, provider=provider, prices=settings.prices)
            cost, source = priced.usd, priced.source
        capture.log(f"aider reported no cost; priced from {source}")
        return Usage(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            api_calls=usage.api_calls,
            cost_usd=cost,
        )

    @staticmethod
    async def _note_tier(request: AgentRequest, capture: Capture) -> None:
        tier = request.tier
        if tier is None:
            return
        edits = "on" if tools_on(request) else "off (--chat-mode ask)"
        prompt = "as a read-only conventions file" if tier.system_prompt else "none"
        await capture.alog(
            f"tier {tier.tier_id}: file edits {edits}; system prompt {prompt}"
            + ("; delegation has no meaning for aider" if tier.delegation_enabled else "")
        )

    @staticmethod
    async def _log_transcript(files: AiderFiles, capture: Capture) -> None:
        try:
            transcript = files.chat_history.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return
        if transcript.strip():
            await capture.alog("aider's chat transcript:")
            await capture.awrite(Stream.AGENT, transcript.strip("\n") + "\n")

    @staticmethod
    async def _log_calls(report: AiderReport, watch: LineWatch, capture: Capture) -> None:
        stopped = (
            f"; stopped at its retry {watch.retries}, past the {watch.allowed_retries} allowed"
            if watch.stopped_at_retry
            else ""
        )
        await capture.alog(
            f"aider made {report.api_calls} API call(s), {report.answers} answered, "
            f"{watch.retries} retr{'y' if watch.retries == 1 else 'ies'} of its own{stopped}; "
            f"ended: {report.exit_reason or 'no exit logged'}"
        )
