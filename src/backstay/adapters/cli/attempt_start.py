"""Where an agent CLI's attempt starts: never in a workspace a failed attempt half edited.

``StartKeeper`` keeps, in one folder of the run (the engine's ``run_NN/``, a harness
run's output folder), the snapshot of the workspace taken before the first attempt
(``backstay.adapters.cli.snapshot``, in ``workspace_snapshot/``) and one private home kept
across the attempts (``session_home/``, 0700), so the CLI's own session store outlives an
attempt (only for a CLI that can continue a session — Gemini CLI's only through the gateway,
``CliAdapter.can_resume`` — with ``resume_session`` on: the others keep a fresh home per
attempt). Before a later
attempt, ``start_path``
decides (a pure function of what the previous attempt left):

* ``resumed_session``: the previous attempt's CLI session died mid-way of a failure
  that did not come from the conversation itself (``RESUMABLE_KINDS``: a provider
  failure, a timeout, a crash; or the runner died under it) or at a spending budget
  (``BUDGET_STOP_CODES``: a request a budget had no room for, the task paused until
  ``backstay resume`` raises it), after at least one answered
  turn (in it, or in the attempts whose session it continued), and its CLI can
  continue it: the attempt continues that session with a short prompt, in the workspace
  as the session left it;
* ``workspace_restored``: otherwise, with a snapshot, the workspace is put back exactly
  as it was before the first attempt and the CLI starts afresh;
* ``workspace_as_left``: no snapshot (``workspace_snapshot: false``, or the workspace was
  over the limit): the attempt starts in the workspace as it is;
* ``fresh``: the first attempt.

A resume the CLI refuses at once (its session is not found) falls back in the same
attempt: the workspace is restored from the snapshot (``attempt.workspace_restored``) and
the CLI starts afresh; without a snapshot the refusal is written in the attempt's
``session.json`` and the attempt fails, and the next one starts afresh.

Each path is an event (``attempt.resumed_session``, ``attempt.workspace_restored``, and
``workspace.snapshot_taken`` / ``workspace.snapshot_skipped`` for the first attempt); the
engine adds it to the attempt's ``metrics.json`` (``attempt_start``), a harness run to its
``agent.log``. ``finished()`` removes the snapshot and the home once
the work succeeded; a task that ends otherwise keeps them (a later ``backstay resume``
starts from them).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import logging
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import ClassVar, Final

from backstay.adapters.cli.base import CliAdapter
from backstay.adapters.cli.snapshot import WorkspaceSnapshot
from backstay.adapters.contract import AgentRequest
from backstay.adapters.session import (
    SessionOptions,
    SessionPlan,
    SessionRecord,
    parse_session_options,
    read_session_record,
)
from backstay.errors import WorkspaceSnapshotError
from backstay.events import BUS, Event
from backstay.failure import Failure
from backstay.taxonomy import FailureKind

__all__ = [
    "BUDGET_STOP_CODES",
    "RESUMABLE_KINDS",
    "SESSION_HOME_DIR",
    "SNAPSHOT_DIR",
    "AttemptResumedSession",
    "AttemptWorkspaceRestored",
    "StartKeeper",
    "StartPath",
    "WorkspaceSnapshotSkipped",
    "WorkspaceSnapshotTaken",
    "start_path",
]

SNAPSHOT_DIR: Final = "workspace_snapshot"
SESSION_HOME_DIR: Final = "session_home"
# Failures that end a session without anything in the conversation calling for it: the
# conversation so far is sound, and continuing it is the same work.
RESUMABLE_KINDS: Final = frozenset(
    {
        FailureKind.RATE_LIMIT,
        FailureKind.SERVER_ERROR,
        FailureKind.NETWORK,
        FailureKind.TIMEOUT,
        FailureKind.QUOTA_EXHAUSTED,
        FailureKind.UNKNOWN,
    }
)


# Stops at a spending budget (a run's request refused, the run reaching its cost budget):
# the conversation so far is sound and paid for; once the budget has room, continuing it
# is the same work, and starting over would pay for its turns again.
BUDGET_STOP_CODES: Final = frozenset({"ERR_LIMIT_BUDGET", "ERR_BUDGET_EXCEEDED"})


class StartPath(enum.StrEnum):
    """How an attempt started (module docstring)."""

    FRESH = "fresh"
    RESUMED_SESSION = "resumed_session"
    WORKSPACE_RESTORED = "workspace_restored"
    WORKSPACE_AS_LEFT = "workspace_as_left"


def start_path(
    *,
    number: int,
    options: SessionOptions,
    previous_failure: Failure | None,
    previous_session: SessionRecord | None,
    agent: str,
    can_resume: bool,
    session_kept: bool,
    has_snapshot: bool,
) -> StartPath:
    """The path attempt ``number`` of a CLI task takes, from the previous attempt's
    ``previous_failure`` (``None``: its runner died under it, a crash like another) and
    its ``session.json``."""
    if number <= 1:
        return StartPath.FRESH
    if (
        options.resume_session
        and can_resume
        and _session_sound(previous_failure)
        and previous_session is not None
        and previous_session.agent == agent
        and previous_session.session_id is not None
        # A continued session holds the answers of the attempts before it, even when it
        # met its failure before an answer of its own.
        and (previous_session.turns > 0 or previous_session.resumed)
        and not previous_session.resume_refused
        and session_kept
    ):
        return StartPath.RESUMED_SESSION
    if has_snapshot:
        return StartPath.WORKSPACE_RESTORED
    return StartPath.WORKSPACE_AS_LEFT


def _session_sound(failure: Failure | None) -> bool:
    """Whether a session that ended in ``failure`` can be continued: nothing in the
    conversation called for its end."""
    return failure is None or failure.kind in RESUMABLE_KINDS or failure.code in BUDGET_STOP_CODES


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class _AttemptEvent(Event):
    attempt: int
    task_id: str | None = None


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class AttemptResumedSession(_AttemptEvent):
    """Attempt ``attempt`` continues the CLI session ``session_id`` of the one before."""

    name: ClassVar[str] = "attempt.resumed_session"
    agent: str
    session_id: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class AttemptWorkspaceRestored(_AttemptEvent):
    """The workspace was put back as the snapshot has it before attempt ``attempt``."""

    name: ClassVar[str] = "attempt.workspace_restored"
    workspace: str
    entries: int


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class WorkspaceSnapshotTaken(_AttemptEvent):
    """The workspace was snapshotted before the task's first attempt."""

    name: ClassVar[str] = "workspace.snapshot_taken"
    workspace: str
    entries: int
    size_bytes: int


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class WorkspaceSnapshotSkipped(_AttemptEvent):
    """No snapshot could be taken (``reason``): later attempts that do not continue a
    session start in the workspace as it is."""

    name: ClassVar[str] = "workspace.snapshot_skipped"
    level: ClassVar[int] = logging.WARNING
    workspace: str
    reason: str


class StartKeeper:
    """The snapshot and the session home of one piece of work (``operation``; the
    engine's task ``task_id``), kept in ``folder``; ``exclude``: folders inside the
    workspace never snapshotted or restored (where the run's state is kept)."""

    def __init__(
        self,
        folder: Path,
        *,
        operation: str,
        policy: str | None = None,
        task_id: str | None = None,
        exclude: Iterable[Path] = (),
    ) -> None:
        self.operation = operation
        self.policy = policy
        self.task_id = task_id
        self.snapshot_dir = folder / SNAPSHOT_DIR
        self.home = folder / SESSION_HOME_DIR
        self._exclude = tuple(exclude)

    def prepare(
        self,
        adapter: object,
        request: AgentRequest,
        *,
        number: int,
        previous_failure: Failure | None = None,
        previous_output: Path | None = None,
    ) -> tuple[AgentRequest, StartPath | None]:
        """``request`` for attempt ``number`` on ``adapter``, after the workspace was
        snapshotted or restored as ``start_path`` says, from the previous attempt's
        failure and output folder (its ``session.json``); ``None`` for an adapter that
        is not an agent CLI's (the request unchanged)."""
        if not isinstance(adapter, CliAdapter):
            return request, None
        options = parse_session_options(request.config)
        snapshot = self._snapshot(request, options, number)
        session = None if previous_output is None else read_session_record(previous_output)
        session_id = None if session is None else session.session_id
        resumes = adapter.can_resume(request)  # Gemini CLI: only through the gateway
        path = start_path(
            number=number,
            options=options,
            previous_failure=previous_failure,
            previous_session=session,
            agent=adapter.name,
            can_resume=resumes,
            session_kept=session_id is not None and adapter.has_session(self.home, session_id),
            has_snapshot=snapshot is not None,
        )
        keeps = options.resume_session and resumes
        plan = SessionPlan(home=self.home, prompt=options.continue_prompt) if keeps else None
        if path is StartPath.RESUMED_SESSION:
            assert plan is not None  # noqa: S101 - start_path resumes only a kept session
            assert session_id is not None  # noqa: S101 - start_path resumes only with one
            restart = None
            if snapshot is not None:
                restart = functools.partial(self._restart, snapshot, request, number)
            plan = dataclasses.replace(plan, resume_id=session_id, restart=restart)
            self._emit(AttemptResumedSession, number, agent=adapter.name, session_id=session_id)
        elif path is StartPath.WORKSPACE_RESTORED:
            assert snapshot is not None  # noqa: S101 - start_path restores only with one
            snapshot.restore()
            self._emit(
                AttemptWorkspaceRestored,
                number,
                workspace=str(request.workspace),
                entries=len(snapshot.entries),
            )
        return dataclasses.replace(request, session=plan), path

    def _restart(self, snapshot: WorkspaceSnapshot, request: AgentRequest, number: int) -> bool:
        """The CLI refused to continue its session: the workspace restored for a fresh
        start in the same attempt."""
        snapshot.restore()
        self._emit(
            AttemptWorkspaceRestored,
            number,
            workspace=str(request.workspace),
            entries=len(snapshot.entries),
        )
        return True

    def finished(self) -> None:
        """The work succeeded: its snapshot and session home are no longer needed."""
        shutil.rmtree(self.snapshot_dir, ignore_errors=True)
        shutil.rmtree(self.home, ignore_errors=True)

    def _snapshot(
        self, request: AgentRequest, options: SessionOptions, number: int
    ) -> WorkspaceSnapshot | None:
        if not options.workspace_snapshot:
            return None
        kept = WorkspaceSnapshot.load(request.workspace, self.snapshot_dir, exclude=self._exclude)
        if kept is not None or number > 1:
            return kept
        try:
            taken = WorkspaceSnapshot.take(
                request.workspace,
                self.snapshot_dir,
                exclude=self._exclude,
                max_bytes=options.snapshot_max_bytes,
            )
        except WorkspaceSnapshotError as err:
            self._emit(
                WorkspaceSnapshotSkipped, number, workspace=str(request.workspace), reason=str(err)
            )
            return None
        self._emit(
            WorkspaceSnapshotTaken,
            number,
            workspace=str(request.workspace),
            entries=len(taken.entries),
            size_bytes=taken.size_bytes,
        )
        return taken

    def _emit(self, event: type[_AttemptEvent], number: int, **fields: object) -> None:
        if BUS.wants(event.level):
            BUS.emit(
                event(
                    operation=self.operation,
                    policy=self.policy,
                    task_id=self.task_id,
                    attempt=number,
                    **fields,
                )
            )
