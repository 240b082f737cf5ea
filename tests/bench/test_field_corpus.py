"""bench/field_corpus.py: the split of the widened field corpus, what counts as a right
answer, and the retry-decision comparison with a status-only rule."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest
from tests.bench.test_fallback import BENCH


@pytest.fixture(scope="module")
def fc() -> Iterator[ModuleType]:
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(BENCH))
        yield importlib.import_module("field_corpus")


def _response(case_id: str, status: int, body: Any, kind: str, **extra: Any) -> dict[str, Any]:
    retryable = kind in {"network", "timeout", "rate_limit", "server_error", "unknown"}
    case = {"id": case_id, "provider": "openai", "status": status, "headers": {}, "body": body}
    case |= {"expected_kind": kind, "expected_retryable": retryable, "acceptable_kinds": []}
    return case | extra


def test_the_split_depends_on_the_case_id_alone(fc: ModuleType) -> None:
    cases = [{"id": f"case-{n}"} for n in range(300)]
    _, unseen = fc.split(cases)
    _, unseen_reversed = fc.split(list(reversed(cases)))
    assert {c["id"] for c in unseen} == {c["id"] for c in unseen_reversed}
    assert 80 <= len(unseen) <= 120  # about a third


def test_a_case_is_right_when_kind_and_retryability_both_are(fc: ModuleType) -> None:
    throttle = _response("t", 429, {"error": {"message": "slow down"}}, "rate_limit")
    assert fc.score([throttle])[0].right == 1
    wrong = _response("w", 429, {"error": {"message": "slow down"}}, "quota_exhausted")
    result, misses = fc.score([wrong])
    assert (result.right, result.total) == (0, 1)
    assert misses == ["w: rate_limit/True"]


def test_an_ambiguous_case_accepts_its_alternatives_and_leaves_retryability_open(
    fc: ModuleType,
) -> None:
    case = _response("a", 429, {"error": {"message": "slow down"}}, "quota_exhausted")
    case |= {"ambiguous": True, "acceptable_kinds": ["quota_exhausted", "rate_limit"]}
    assert fc.score([case])[0].right == 1


def test_an_agent_case_expecting_success_is_right_only_when_nothing_failed(
    fc: ModuleType,
) -> None:
    case = {"id": "ok", "agent": "codex", "exit_code": 0, "expected_kind": None}
    assert fc.score([case | {"text": '{"type": "turn.completed"}'}])[0].right == 1
    assert fc.score([case | {"text": ""}])[0].right == 0


def test_retry_decisions_compare_backstay_with_a_status_only_rule(fc: ModuleType) -> None:
    quota = _response(
        "q", 429, {"error": {"message": "x", "code": "insufficient_quota"}}, "quota_exhausted"
    )
    agent = {"id": "g", "agent": "codex", "text": "", "exit_code": 1, "expected_kind": "unknown"}
    mine, theirs = fc.retry_decisions([quota, agent], lambda status, _h, _b: status == 429)
    assert (mine.right, theirs.right, mine.total) == (1, 0, 1)
