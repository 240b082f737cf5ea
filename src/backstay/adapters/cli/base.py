"""What the agent CLI adapters share: ``CliAdapter``, the template of their ``execute`` (as
``backstay.adapters.api.base.ApiAdapter`` is for the API adapters); the prompt, which
reaches the CLI on its stdin (never on the command line, where ``ps`` shows it to every
local user); and a run's environment (the request's, with a private home and a fallback
search path)."""

from __future__ import annotations

import abc
import asyncio
import contextlib
import dataclasses
import tempfile
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Final, Generic, Protocol, TypeVar

from backstay.adapters.base import BaseAdapter
from backstay.adapters.capture import Capture
from backstay.adapters.cli._pump import LineCallback
from backstay.adapters.cli.process import ProcessOutcome, run_process
from backstay.adapters.contract import AgentRequest, AgentResult, AgentStatus
from backstay.adapters.session import (
    SESSION_KEYS,
    SessionRecord,
    parse_session_options,
    write_session_record,
)
from backstay.adapters.usage import Usage
from backstay.agents.home import private_home
from backstay.agents.locate import Located, locate
from backstay.failure import Failure

if TYPE_CHECKING:
    from backstay.adapters.cli.attempt_start import StartKeeper

__all__ = ["DEFAULT_PATH", "CliAdapter", "Listeners", "home_run_env", "prompt_stdin"]

# A run's PATH when the request's environment has none: tools run shell commands.
DEFAULT_PATH: Final = "/usr/local/bin:/usr/bin:/bin"


def prompt_stdin(request: AgentRequest) -> str:
    """The request's prompt, for ``run_process``'s ``stdin_text``: every CLI adapter but
    Aider's (which reads a private message file) gives it to the CLI that way."""
    return request.read_prompt()


def home_run_env(
    request_env: Mapping[str, str],
    home: Path,
    *,
    owned: Collection[str],
    owned_prefixes: tuple[str, ...],
) -> dict[str, str]:
    """The request's environment less the variables the run sets itself (``owned``, and
    any name starting with one of ``owned_prefixes``), with ``DEFAULT_PATH`` when it has
    no ``PATH``, and the private ``home`` (``private_home``) in place of the caller's."""
    env = {
        name: value
        for name, value in request_env.items()
        if name not in owned and not name.startswith(owned_prefixes)
    }
    env.setdefault("PATH", DEFAULT_PATH)
    return env | private_home(home)


class _Located(Protocol):
    """Settings that name the program to run (``config.binary``)."""

    @property
    def binary(self) -> str | None: ...


S = TypeVar("S", bound=_Located)
R = TypeVar("R")


def _nothing() -> None:
    return None


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Listeners:
    """What ``run_process`` calls while the CLI runs, and what runs once it has ended
    (``ended``, whatever happened)."""

    stdout: LineCallback | None = None
    stderr: LineCallback | None = None
    stop: asyncio.Event | None = None
    ended: Callable[[], None] = _nothing


class CliAdapter(BaseAdapter, Generic[S, R]):
    """The template of an agent-CLI adapter's ``execute``, written once:

    settings (``settings_for``) → the program at a supported version (``locate``) → ready
    to run (``check_ready``) → the attempt's state (``start``: the reader of its output) →
    in a temporary folder removed afterwards, the private home and the environment
    (``prepare_home``), the command line (``command``) with the prompt on stdin
    (``stdin``), one ``run_process`` under the request's deadline and stall limit (and
    ``listeners``) → what the run left behind (``collect``) → usage and its cost
    (``usage``) → the failure, classified at one boundary (``failure``, from
    ``evidence``) → ``AgentResult`` with ``output`` and ``artefacts``.

    An agent's module sets ``name``, ``agent``, ``program`` (its ``locate`` name) and
    ``config_keys``, and writes only the hooks that differ: ``parse``, ``start``,
    ``prepare_home``, ``command`` (or ``argv``), ``listeners``, ``usage`` and ``output``
    always; the others when its CLI needs them.

    Sessions (``backstay.adapters.session``): a request with a ``session`` runs in that
    plan's home, kept across the task's attempts, and writes ``session.json`` (the
    ``session_id`` its CLI reported) when the run ends. An agent whose CLI can continue a
    session sets ``resumes_sessions`` and writes ``resume_command`` (the command line that
    continues ``resume_id``; the plan's short prompt goes on stdin), ``session_id``,
    ``session_turns``, ``has_session`` and ``resume_refused``.
    """

    program: ClassVar[str] = ""
    # Whether a private folder that cannot be removed afterwards is let be.
    ignore_cleanup_errors: ClassVar[bool] = False
    # A command prefix for every run whose request names none (``run_launcher``).
    launcher: tuple[str, ...] = ()
    # Whether the CLI can continue a session of an earlier attempt (``resume_command``).
    resumes_sessions: ClassVar[bool] = False

    # -- settings and readiness ------------------------------------------------------

    @abc.abstractmethod
    def parse(self, config: Mapping[str, Any]) -> S:
        """The adapter's settings in ``config``, checked (``ConfigError``)."""

    def settings_for(self, request: AgentRequest) -> S:
        """The settings of one attempt: by default those of ``request.config``."""
        return self.parse(request.config)

    def validate_config(self, config: Mapping[str, Any]) -> bool:
        """The keys and values of the settings, and a supported program installed
        (``ConfigError`` saying how to install one)."""
        super().validate_config({k: v for k, v in config.items() if k not in SESSION_KEYS})
        parse_session_options(config)
        self.locate(self.parse(config))
        return True

    def locate(self, settings: S) -> Located:
        """The program the settings lead to, at a supported version."""
        return locate(self.program, settings.binary, where="config.binary")

    def check_ready(self, request: AgentRequest, settings: S) -> Failure | None:
        """Why the attempt cannot run at all (the attempt then fails with it, running
        nothing), else ``None``; may raise ``ConfigError``."""
        return None

    # -- the run ---------------------------------------------------------------------

    @abc.abstractmethod
    async def start(self, request: AgentRequest, settings: S, cli: Located, capture: Capture) -> R:
        """The attempt's state: what reads the CLI's output, and what it finds."""

    @abc.abstractmethod
    async def prepare_home(
        self,
        request: AgentRequest,
        settings: S,
        cli: Located,
        run: R,
        *,
        folder: Path,
        capture: Capture,
    ) -> dict[str, str]:
        """Write the private home in ``folder``; the run's whole environment."""

    def command(self, request: AgentRequest, settings: S, binary: Path) -> list[str]:
        """The command line of one attempt (the prompt is not on it: ``stdin``). Every
        agent writes it, or ``argv`` instead when its command line names files of the
        private home (Aider)."""
        raise NotImplementedError(f"{type(self).__name__} writes command or argv")

    def argv(self, request: AgentRequest, settings: S, cli: Located, run: R) -> list[str]:
        """The command line, once the private home is written: ``command`` by default."""
        return self.command(request, settings, cli.path)

    def stdin(self, request: AgentRequest, run: R) -> str | None:
        """What the CLI reads on its stdin: the prompt (``prompt_stdin``)."""
        return prompt_stdin(request)

    def run_launcher(self, request: AgentRequest, settings: S) -> tuple[str, ...]:
        """The command prefix of the run: the request's, else the adapter's."""
        return tuple(request.launcher or self.launcher)

    def resume_command(
        self, request: AgentRequest, settings: S, binary: Path, session_id: str
    ) -> list[str]:
        """The command line that continues the CLI's session ``session_id`` (the plan's
        prompt on stdin); only called when ``resumes_sessions``."""
        raise NotImplementedError(f"{type(self).__name__} cannot continue a session")

    def session_id(self, run: R) -> str | None:
        """The id of the session the run's CLI reported; ``None`` when it said none."""
        return None

    def session_turns(self, run: R) -> int:
        """How many answers of the model the run's CLI reported (0: none, or unknown)."""
        return 0

    def has_session(self, home: Path, session_id: str) -> bool:
        """Whether the CLI's session ``session_id`` is kept in the session home ``home``."""
        return False

    def resume_refused(self, outcome: ProcessOutcome, run: R) -> bool:
        """Whether a run that was to continue a session failed because the CLI would not
        (the session was not found)."""
        return False

    def can_resume(self, request: AgentRequest) -> bool:
        """Whether an attempt of ``request`` may continue a session of an earlier attempt
        (and so keeps the CLI's home across attempts): ``resumes_sessions``, unless the
        CLI's resumed session needs more (Gemini CLI's: the gateway's repair)."""
        return self.resumes_sessions

    def start_keeper(self, request: AgentRequest, *, operation: str) -> StartKeeper:
        """A harness run's snapshot and session home, kept in its output folder (which is
        never snapshotted itself)."""
        # Imported here: attempt_start builds on this module.
        from backstay.adapters.cli.attempt_start import StartKeeper  # noqa: PLC0415

        return StartKeeper(request.output_dir, operation=operation, exclude=(request.output_dir,))

    def _noting_session(
        self, request: AgentRequest, run: R, listen: Listeners, resume_id: str | None
    ) -> Listeners:
        """``listen`` with ``session.json`` written while the CLI runs, each time its
        session id or answers change: a runner that dies mid-attempt leaves it behind."""
        seen: list[tuple[str | None, int]] = [(None, 0)]
        inner = listen.stdout

        def line(text: str) -> None:
            if inner is not None:
                inner(text)
            now = (self.session_id(run), self.session_turns(run))
            if now[0] is not None and now != seen[-1]:
                seen.append(now)
                record = SessionRecord(
                    agent=self.name, session_id=now[0], turns=now[1], resumed=bool(resume_id)
                )
                write_session_record(request.output_dir, record)

        return dataclasses.replace(listen, stdout=line)

    def _resume_id(self, request: AgentRequest) -> str | None:
        if request.session is None or not self.resumes_sessions:
            return None
        return request.session.resume_id

    @abc.abstractmethod
    def listeners(self, run: R) -> Listeners:
        """What ``run_process`` calls with the CLI's output."""

    async def collect(self, request: AgentRequest, run: R, folder: Path, capture: Capture) -> None:
        """Read what the run left in its private ``folder`` before it is removed."""

    # -- the outcome -----------------------------------------------------------------

    @abc.abstractmethod
    async def usage(self, request: AgentRequest, settings: S, run: R, capture: Capture) -> Usage:
        """The attempt's usage, with its cost."""

    def evidence(self, outcome: ProcessOutcome, run: R) -> str:
        """What the failure is classified from: all the CLI printed, by default."""
        return f"{outcome.stdout_tail}\n{outcome.stderr_tail}".strip()

    def failure(self, outcome: ProcessOutcome, request: AgentRequest, run: R) -> Failure | None:
        """The attempt's failure: ``process_failure`` on ``evidence``, by default."""
        return self.process_failure(outcome, request, evidence=self.evidence(outcome, run))

    @abc.abstractmethod
    def output(self, run: R, outcome: ProcessOutcome, *, failed: bool) -> str:
        """The attempt's output (``failed``: the attempt failed)."""

    def artefacts(self, request: AgentRequest, run: R) -> tuple[Path, ...]:
        """The files the attempt made: none reported, by default."""
        return ()

    async def execute(
        self, request: AgentRequest, *, operation_id: str, attempt_id: str, capture: Capture
    ) -> AgentResult:
        settings = self.settings_for(request)
        cli = self.locate(settings)
        not_ready = self.check_ready(request, settings)
        if not_ready is not None:
            return AgentResult.failed(not_ready)
        resume_id = self._resume_id(request)
        run, outcome = await self._run_once(request, settings, cli, capture, resume_id)
        refused = resume_id is not None and self.resume_refused(outcome, run)
        restart = None if request.session is None else request.session.restart
        if refused and restart is not None and restart():
            await capture.alog(
                f"{self.name}: session {resume_id} could not be continued; the workspace was "
                "restored and the CLI starts afresh"
            )
            resume_id, refused = None, False
            run, outcome = await self._run_once(request, settings, cli, capture, None)
        if request.session is not None:
            write_session_record(
                request.output_dir,
                SessionRecord(
                    agent=self.name,
                    session_id=self.session_id(run) or (None if refused else resume_id),
                    turns=self.session_turns(run),
                    resumed=resume_id is not None and not refused,
                    resume_refused=refused,
                ),
            )
        usage = await self.usage(request, settings, run, capture)
        failure = self.failure(outcome, request, run)
        output = self.output(run, outcome, failed=failure is not None)
        artefacts = self.artefacts(request, run)
        if failure is not None:
            return AgentResult.failed(
                failure,
                output=output,
                usage=usage,
                exit_code=outcome.exit_code,
                duration_s=outcome.duration_s,
                artefacts=artefacts,
            )
        return AgentResult(
            status=AgentStatus.SUCCEEDED,
            output=output,
            usage=usage,
            exit_code=outcome.exit_code,
            duration_s=outcome.duration_s,
            artefacts=artefacts,
        )

    async def _run_once(
        self,
        request: AgentRequest,
        settings: S,
        cli: Located,
        capture: Capture,
        resume_id: str | None,
    ) -> tuple[R, ProcessOutcome]:
        """One run of the CLI: a new session, or the session ``resume_id`` continued."""
        run = await self.start(request, settings, cli, capture)
        with contextlib.ExitStack() as stack:
            if request.session is None:
                folder = Path(
                    stack.enter_context(
                        tempfile.TemporaryDirectory(
                            prefix=f"backstay-{self.name}-",
                            ignore_cleanup_errors=self.ignore_cleanup_errors,
                        )
                    )
                )
            else:  # kept across the task's attempts: the CLI's sessions live there
                folder = request.session.home
                folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            env = await self.prepare_home(
                request, settings, cli, run, folder=folder, capture=capture
            )
            if resume_id is None:
                argv = self.argv(request, settings, cli, run)
                stdin = self.stdin(request, run)
            else:
                argv = self.resume_command(request, settings, cli.path, resume_id)
                stdin = None if request.session is None else request.session.prompt
                await capture.alog(f"{self.name}: continuing session {resume_id}")
            listen = self.listeners(run)
            if request.session is not None:
                listen = self._noting_session(request, run, listen, resume_id)
            try:
                outcome = await run_process(
                    argv,
                    cwd=request.workspace,
                    env=env,
                    timeout_s=request.timeout_s,
                    stall_timeout_s=request.stall_timeout_s,
                    capture=capture,
                    on_stdout_line=listen.stdout,
                    on_stderr_line=listen.stderr,
                    stop=listen.stop,
                    launcher=self.run_launcher(request, settings),
                    stdin_text=stdin,
                )
            finally:
                listen.ended()
            await self.collect(request, run, folder, capture)
        return run, outcome
