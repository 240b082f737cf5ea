"""The widened field corpus (``tests/classify/data/wide_*.json``): real failures gathered from
public issue threads and other projects' recorded fixtures, each with its source and label.

One third of the cases is set aside as the *unseen* set, chosen by a hash of the case id so
that the split never depends on order, on who added a case, or on what the classifier does
with it. The rules are developed against the other two thirds; the unseen third is only
measured. ``score`` gives, for any list of cases, how many backstay classifies right on kind
and retryability together (the measure the field tests use), and how many retry decisions
a status-only rule (the official SDKs' ``_should_retry``) gets right on the provider cases
that carry an HTTP status.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Final

import backstay

DATA: Final = Path(__file__).resolve().parents[1] / "tests" / "classify" / "data"
PROVIDER_FILE: Final = DATA / "wide_provider_responses.json"
AGENT_FILE: Final = DATA / "wide_agent_outputs.json"
DEFAULT_NOW: Final = dt.datetime(2026, 9, 20, 12, 0, tzinfo=dt.UTC)
RETRYABLE_KINDS: Final = frozenset(
    {"network", "timeout", "rate_limit", "server_error", "output_invalid", "unknown"}
)

Case = dict[str, Any]
# The status-only retry rule: (status, headers, body as text) -> retried?
StatusRule = Callable[[int, dict[str, str], str], bool]


def is_unseen(case_id: str) -> bool:
    """Whether a case belongs to the unseen third: the first byte of the SHA-256 of its id."""
    return hashlib.sha256(case_id.encode("utf-8")).digest()[0] % 3 == 0


def load(path: Path) -> list[Case]:
    cases: list[Case] = json.loads(path.read_text(encoding="utf-8"))
    return cases


def provider_cases() -> list[Case]:
    return load(PROVIDER_FILE)


def agent_cases() -> list[Case]:
    return load(AGENT_FILE)


def split(cases: Iterable[Case]) -> tuple[list[Case], list[Case]]:
    """``(development, unseen)``."""
    development: list[Case] = []
    unseen: list[Case] = []
    for case in cases:
        (unseen if is_unseen(case["id"]) else development).append(case)
    return development, unseen


def _now(case: Case) -> dt.datetime:
    return dt.datetime.fromisoformat(case["now"]) if case.get("now") else DEFAULT_NOW


def classify_case(case: Case) -> backstay.Failure | None:
    """What backstay makes of one case (``None``: an agent run taken for a success)."""
    if "agent" in case:
        return backstay.check_output(
            case["text"], agent=case["agent"], exit_code=case["exit_code"], now=_now(case)
        )
    return backstay.classify_response(
        case["status"], case["headers"], case["body"], provider=case["provider"], now=_now(case)
    )


def _pins_retryability(case: Case) -> bool:
    return not (case.get("ambiguous") or case.get("debatable"))


def is_right(case: Case, failure: backstay.Failure | None) -> bool:
    """Kind among the accepted ones and, unless the case leaves it open, retryability right."""
    if failure is None:
        return case["expected_kind"] is None
    allowed = {case["expected_kind"], *case.get("acceptable_kinds", [])}
    if str(failure.kind) not in allowed:
        return False
    return not _pins_retryability(case) or failure.retryable is case["expected_retryable"]


@dataclasses.dataclass(frozen=True, slots=True)
class Score:
    """Right answers out of a number of cases."""

    right: int
    total: int

    @property
    def share(self) -> float:
        return self.right / self.total if self.total else 0.0

    def __str__(self) -> str:
        return f"{self.right:>3}/{self.total:<3} ({self.share:.0%})"


def score(cases: Iterable[Case]) -> tuple[Score, list[str]]:
    """backstay's kind-and-retryability score on ``cases``, and the ids it gets wrong."""
    total = 0
    misses: list[str] = []
    for case in cases:
        total += 1
        failure = classify_case(case)
        if not is_right(case, failure):
            got = "success" if failure is None else f"{failure.kind}/{failure.retryable}"
            misses.append(f"{case['id']}: {got}")
    return Score(total - len(misses), total), misses


def retry_decisions(cases: Iterable[Case], rule: StatusRule) -> tuple[Score, Score]:
    """Retry decisions right on the provider cases with an HTTP status and a pinned
    retryability: ``(backstay, rule)``."""
    mine = theirs = total = 0
    for case in cases:
        if "agent" in case or not isinstance(case["status"], int) or not _pins_retryability(case):
            continue
        total += 1
        expected = case["expected_retryable"]
        failure = classify_case(case)
        mine += failure is not None and failure.retryable is expected
        body = case["body"] if isinstance(case["body"], str) else json.dumps(case["body"])
        theirs += rule(case["status"], case["headers"], body) is expected
    return Score(mine, total), Score(theirs, total)
