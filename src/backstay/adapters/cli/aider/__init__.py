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
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Final

from backstay._checks import check_launcher
from backstay.adapters.base import BaseAdapter
from backstay.adapters.capture import Capture, Stream
from backstay.adapters.cli.aider.command import (
    AiderFiles,
    command,
    environment,
    prepare,
    tools_on,
)
from backstay.adapters.cli.aider.output import AiderReport, LineWatch, read_report
from backstay.adapters.cli.aider.settings import CONFIG_KEYS, AiderSettings, parse_settings
from backstay.adapters.cli.process import ProcessOutcome, run_process
from backstay.adapters.contract import AgentRequest, AgentResult, AgentStatus
from backstay.adapters.pricing import price_usage
from backstay.adapters.provider_env import ANTHROPIC_ENV, GEMINI_ENV, OPENAI_ENV, ProviderEnv
from backstay.adapters.usage import Usage
from backstay.agents import Located, locate
from backstay.failure import Failure

__all__ = ["AiderAdapter"]

# What litellm reads for the providers Aider is used with here (``openai/…``,
# ``anthropic/…``, ``gemini/…``); ``OPENAI_API_BASE`` is Aider's own name for the base URL,
# ``OPENAI_ORGANIZATION`` litellm's for the organization.
PROVIDER_ENV: Final = ProviderEnv(
    credentials=(
        *OPENAI_ENV.credentials,
        ANTHROPIC_ENV.credentials[0],
        GEMINI_ENV.credentials[0],
    ),
    endpoint=("OPENAI_API_BASE", *OPENAI_ENV.endpoint, *ANTHROPIC_ENV.endpoint),
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


class AiderAdapter(BaseAdapter):
    """Runs Aider once per attempt; see the module docstring.

    ``launcher`` is a command prefix used when a request carries none of its own
    (``AgentRequest.launcher``): the engine builds requests without one, so a harness
    that runs Aider in a network namespace gives it here.
    """

    name: ClassVar[str] = "aider"
    agent: ClassVar[str | None] = "aider"
    config_keys: ClassVar[frozenset[str]] = CONFIG_KEYS
    provider_env: ClassVar[ProviderEnv] = PROVIDER_ENV

    def __init__(self, *, launcher: Sequence[str] = ()) -> None:
        self.launcher = check_launcher(launcher, where="launcher")

    def validate_config(self, config: Mapping[str, Any]) -> bool:
        """Reject unknown or malformed settings, and an Aider that is not installed at a
        supported version (the error says how to install one)."""
        super().validate_config(config)
        self._locate(parse_settings(config))
        return True

    @staticmethod
    def _locate(settings: AiderSettings) -> Located:
        return locate(CLI_NAME, settings.binary, where="config.binary")

    async def execute(
        self, request: AgentRequest, *, operation_id: str, attempt_id: str, capture: Capture
    ) -> AgentResult:
        settings = parse_settings(request.config)
        located = self._locate(settings)
        prompt = request.read_prompt()
        await self._note_tier(request, capture)
        with tempfile.TemporaryDirectory(prefix="backstay-aider-") as root:
            files = AiderFiles(Path(root))
            prepare(files, located, request, prompt)
            await capture.alog(
                f"aider {located.version} ({located.source}: {located.path}); "
                f"private HOME {files.home}; internal retries allowed: "
                f"{settings.internal_retries}"
            )
            stop = asyncio.Event()
            watch = LineWatch(allowed_retries=settings.internal_retries, stop=stop)
            outcome = await run_process(
                command(located.path, files, request, settings),
                cwd=request.workspace,
                env=environment(files, located, request),
                timeout_s=request.timeout_s,
                stall_timeout_s=request.stall_timeout_s,
                capture=capture,
                on_stdout_line=watch.line,
                launcher=request.launcher or self.launcher,
                stop=stop,
            )
            report = read_report(files, watch)
            await self._log_transcript(files, capture)
        await self._log_calls(report, watch, capture)
        usage = self._usage(report, request, settings, capture)
        failure = self._failure(outcome, request, report)
        artefacts = _edited(request.workspace, watch.edited)
        if failure is not None:
            return AgentResult.failed(
                failure,
                output=report.reply or outcome.stdout_tail,
                usage=usage,
                exit_code=outcome.exit_code,
                duration_s=outcome.duration_s,
                artefacts=artefacts,
            )
        return AgentResult(
            status=AgentStatus.SUCCEEDED,
            output=report.reply,
            usage=usage,
            exit_code=outcome.exit_code,
            duration_s=outcome.duration_s,
            artefacts=artefacts,
        )

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
