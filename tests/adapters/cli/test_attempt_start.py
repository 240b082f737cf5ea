"""``start_path``: which way a CLI's attempt starts, from what the one before left."""

from __future__ import annotations

from typing import Any

import pytest

from backstay.adapters.cli.attempt_start import (
    BUDGET_STOP_CODES,
    RESUMABLE_KINDS,
    StartPath,
    start_path,
)
from backstay.adapters.session import SessionOptions, SessionRecord
from backstay.failure import Failure
from backstay.taxonomy import FailureKind

CODE_OF_KIND = {
    FailureKind.NETWORK: "ERR_CONNECTION_REFUSED",
    FailureKind.TIMEOUT: "ERR_TIMEOUT",
    FailureKind.RATE_LIMIT: "ERR_HTTP_429_RATE_LIMITED",
    FailureKind.SERVER_ERROR: "ERR_HTTP_500_INTERNAL",
    FailureKind.CONTEXT_LIMIT: "ERR_LLM_CONTEXT_LENGTH",
    FailureKind.CONTENT_POLICY: "ERR_LLM_CONTENT_FILTER",
    FailureKind.QUOTA_EXHAUSTED: "ERR_LLM_QUOTA_EXHAUSTED",
    FailureKind.AUTH: "ERR_HTTP_401_UNAUTHORIZED",
    FailureKind.INVALID_REQUEST: "ERR_HTTP_400_BAD_REQUEST",
    FailureKind.OUTPUT_INVALID: "ERR_OUTPUT_INVALID",
    FailureKind.LIMIT_EXCEEDED: "ERR_LIMIT_EXCEEDED",
    FailureKind.SECURITY_VIOLATION: "ERR_SECURITY_VIOLATION",
    FailureKind.CANCELLED: "ERR_CANCELLED",
    FailureKind.UNKNOWN: "ERR_UNKNOWN",
}
SESSION = SessionRecord(agent="claude-code", session_id="s-1", turns=2)


def _path(**changes: Any) -> StartPath:
    given: dict[str, Any] = {
        "number": 2,
        "options": SessionOptions(),
        "previous_failure": Failure(code="ERR_HTTP_500_INTERNAL"),
        "previous_session": SESSION,
        "agent": "claude-code",
        "can_resume": True,
        "session_kept": True,
        "has_snapshot": True,
    }
    return start_path(**(given | changes))


def test_a_continued_session_that_failed_before_an_answer_is_continued_again() -> None:
    # A resumed attempt met the failure at its first request: its session still holds the
    # answers of the attempt before it.
    resumed = SessionRecord(agent="claude-code", session_id="s-1", turns=0, resumed=True)
    assert _path(previous_session=resumed) is StartPath.RESUMED_SESSION


def test_the_first_attempt_starts_fresh() -> None:
    assert _path(number=1) is StartPath.FRESH


def test_a_session_whose_runner_died_under_it_is_continued() -> None:
    assert _path(previous_failure=None) is StartPath.RESUMED_SESSION


@pytest.mark.parametrize("kind", list(FailureKind))
def test_only_failures_outside_the_conversation_continue_the_session(kind: FailureKind) -> None:
    path = _path(previous_failure=Failure(code=CODE_OF_KIND[kind]))
    if kind in RESUMABLE_KINDS:
        assert path is StartPath.RESUMED_SESSION
    else:
        assert path is StartPath.WORKSPACE_RESTORED


@pytest.mark.parametrize("code", sorted(BUDGET_STOP_CODES))
def test_a_session_stopped_at_a_spending_budget_is_continued(code: str) -> None:
    # The gateway refused a request at the budget (ERR_LIMIT_BUDGET, kind limit_exceeded):
    # the session's answered turns are paid for, and a resume with room goes on from them.
    failure = Failure(code=code, message="budget_exceeded: the task token budget 10")
    assert failure.kind is FailureKind.LIMIT_EXCEEDED
    assert _path(previous_failure=failure) is StartPath.RESUMED_SESSION


@pytest.mark.parametrize(
    "changes",
    [
        {"options": SessionOptions(resume_session=False)},
        {"can_resume": False},
        {"session_kept": False},
        {"previous_session": SessionRecord(agent="claude-code", session_id="s-1", turns=0)},
    ],
    ids=lambda c: next(iter(c)),
)
def test_a_session_stopped_at_a_budget_that_cannot_go_on_restores_the_workspace(
    changes: dict[str, Any],
) -> None:
    # No answer yet, a CLI that does not continue sessions, resume_session: false, or
    # its session not in the kept home: the workspace is restored, as before.
    budget = Failure(code="ERR_LIMIT_BUDGET", message="budget_exceeded: the batch budget")
    assert _path(previous_failure=budget, **changes) is StartPath.WORKSPACE_RESTORED


def test_other_limits_of_the_run_still_restore_the_workspace() -> None:
    for code in ("ERR_LIMIT_EXCEEDED", "ERR_LIMIT_MAX_TURNS"):
        assert _path(previous_failure=Failure(code=code)) is StartPath.WORKSPACE_RESTORED


@pytest.mark.parametrize(
    "changes",
    [
        {"options": SessionOptions(resume_session=False)},
        {"can_resume": False},
        {"session_kept": False},
        {"previous_session": None},
        {"previous_session": SessionRecord(agent="codex", session_id="s-1", turns=2)},
        {"previous_session": SessionRecord(agent="claude-code", turns=2)},
        {"previous_session": SessionRecord(agent="claude-code", session_id="s-1", turns=0)},
        {
            "previous_session": SessionRecord(
                agent="claude-code", session_id="s-1", turns=2, resume_refused=True
            )
        },
    ],
    ids=lambda c: next(iter(c)),
)
def test_a_session_that_cannot_go_on_restores_the_workspace(changes: dict[str, Any]) -> None:
    assert _path(**changes) is StartPath.WORKSPACE_RESTORED
    assert _path(**changes, has_snapshot=False) is StartPath.WORKSPACE_AS_LEFT
