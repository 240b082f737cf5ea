"""Field cases: real provider responses and agent CLI outputs collected from public issue
threads, documentation and harness fixtures, each with its source and the reasoning behind
its expected kind (``data/*.json``).

They were gathered apart from the per-provider tables to test that the classifier's rules
generalise; several rules in ``backstay.classify`` exist because one of these failed.
Cases marked ambiguous/debatable accept any kind in ``acceptable_kinds`` and do not pin
retryability.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from tests.classify.expect import RETRYABLE_KINDS as RETRYABLE

from backstay import CODES, check_output, classify_response

DATA = Path(__file__).with_name("data")
DEFAULT_NOW = dt.datetime(2026, 9, 20, 12, 0, tzinfo=dt.UTC)


def _load(name: str) -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads((DATA / name).read_text(encoding="utf-8"))
    return cases


PROVIDER_CASES = _load("field_provider_responses.json")
AGENT_CASES = _load("field_agent_outputs.json")


def _allowed(case: dict[str, Any]) -> set[str]:
    return {case["expected_kind"], *case.get("acceptable_kinds", [])}


@pytest.mark.parametrize("case", PROVIDER_CASES, ids=[c["id"] for c in PROVIDER_CASES])
def test_provider_response_classifies_as_its_source_documents(case: dict[str, Any]) -> None:
    failure = classify_response(
        case["status"], case["headers"], case["body"], provider=case["provider"], now=DEFAULT_NOW
    )
    assert str(failure.kind) in _allowed(case), case["reasoning"]
    assert failure.retryable is CODES[failure.code].retryable
    if not case.get("ambiguous"):
        assert failure.retryable is case["expected_retryable"], case["reasoning"]


@pytest.mark.parametrize("case", AGENT_CASES, ids=[c["id"] for c in AGENT_CASES])
def test_agent_output_classifies_as_its_source_documents(case: dict[str, Any]) -> None:
    now = dt.datetime.fromisoformat(case["now"]) if case.get("now") else DEFAULT_NOW
    failure = check_output(case["text"], agent=case["agent"], exit_code=case["exit_code"], now=now)
    if case["expected_kind"] is None:
        assert failure is None, case["reasoning"]
        return
    assert failure is not None, case["reasoning"]
    assert str(failure.kind) in _allowed(case), case["reasoning"]
    if not case.get("debatable"):
        assert failure.retryable is (str(failure.kind) in RETRYABLE)
    if case.get("expected_resets_at"):
        assert failure.resets_at == dt.datetime.fromisoformat(case["expected_resets_at"])
