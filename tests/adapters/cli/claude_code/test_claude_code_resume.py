"""The real Claude Code, run by the engine inside a private network namespace against the
fake provider there, its four-turn session dying at turn 3 (``resume_support``): the next
attempt continues the session (``claude --resume``), or, with ``resume_session: false``,
starts afresh in the workspace restored from its snapshot. Either way each step lands in
the workspace once.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest
from tests.adapters.cli.resume_support import (
    RERUN_TURNS,
    RESUMED_TURNS,
    SESSION,
    START,
    STEPS,
    Session,
    run_session,
)
from tests.adapters.cli_provider import BASE_ENV, Providers, installed, namespace_providers
from tests.adapters.support import CANARY_KEY

from backstay.adapters.cli.claude_code import ClaudeCodeAdapter
from backstay.adapters.session import read_session_record
from backstay.engine.attempt_start import SESSION_HOME_DIR, SNAPSHOT_DIR
from backstay.engine.states import TaskState
from backstay.taxonomy import FailureKind
from backstay.testing.fakeclock import FakeClock

MODEL: Final = "claude-sonnet-4-5"
ENV: Final = {**BASE_ENV, "ANTHROPIC_API_KEY": CANARY_KEY}


@pytest.fixture(scope="module")
def providers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Providers]:
    yield from namespace_providers(tmp_path_factory)


@pytest.fixture(autouse=True)
def cli() -> None:
    installed("claude-code")


def _run(
    providers: Providers, tmp_path: Path, clock: FakeClock, **config: Any
) -> tuple[Session, dict[str, Any]]:
    served = providers.serve(SESSION)
    session = run_session(
        ClaudeCodeAdapter(),
        tmp_path=tmp_path,
        clock=clock,
        model=MODEL,
        env=ENV,
        config={"base_url": served.url, "launcher": providers.launcher, **config},
    )
    assert session.state is TaskState.SUCCEEDED, session.log()
    assert [a.failure.kind if a.failure else None for a in session.attempts] == [
        FailureKind.SERVER_ERROR,
        None,
    ]
    return session, served.stats()


def test_a_session_that_died_mid_way_is_continued_and_each_step_done_once(
    providers: Providers, backstay_clock: FakeClock, tmp_path: Path
) -> None:
    session, stats = _run(providers, tmp_path, backstay_clock)
    assert session.notes == START + STEPS
    # The provider saw turns 1 and 2 once: the second attempt went on from turn 3.
    assert stats["by_turn"] == RESUMED_TURNS
    first = read_session_record(Path(session.attempts[0].output_dir))
    second = read_session_record(Path(session.attempts[1].output_dir))
    assert first is not None
    assert first.session_id
    assert first.turns == 2
    assert second is not None
    assert second.resumed
    assert second.session_id == first.session_id
    assert f"--resume {first.session_id}" in session.log()
    assert [session.metrics(i)["attempt_start"] for i in (0, 1)] == ["fresh", "resumed_session"]
    resumed = session.named("attempt.resumed_session")
    assert [(e["attempt"], e["session_id"]) for e in resumed] == [(2, first.session_id)]
    assert not session.named("attempt.workspace_restored")
    # The task succeeded: its snapshot and the CLI's home are gone.
    run_dir = session.spec.run_dir(session.state_dir)
    assert not (run_dir / SNAPSHOT_DIR).exists()
    assert not (run_dir / SESSION_HOME_DIR).exists()
    assert CANARY_KEY not in session.log(0) + session.log(1)


def test_without_resume_the_rerun_starts_in_the_restored_workspace(
    providers: Providers, backstay_clock: FakeClock, tmp_path: Path
) -> None:
    session, stats = _run(providers, tmp_path, backstay_clock, resume_session=False)
    # Steps 1 and 2 of the first attempt were taken back with the snapshot; the rerun
    # wrote every step again, once.
    assert session.notes == START + STEPS
    assert stats["by_turn"] == RERUN_TURNS
    assert "--resume" not in session.log()
    assert [session.metrics(i)["attempt_start"] for i in (0, 1)] == [
        "fresh",
        "workspace_restored",
    ]
    assert [e["attempt"] for e in session.named("attempt.workspace_restored")] == [2]
    taken = session.named("workspace.snapshot_taken")
    assert [(e["attempt"], e["entries"]) for e in taken] == [(1, 1)]
