"""Operation and attempt ids: built one way, parsed back into exactly their parts."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from backstay.errors import ConfigError
from backstay.idempotency.ids import (
    AttemptIdParts,
    OperationIdParts,
    attempt_id,
    operation_id,
    parse_attempt_id,
    parse_operation_id,
)

PART = st.text(min_size=1, max_size=20).filter(lambda s: ":" not in s and s.isprintable())


def test_an_operation_id_joins_its_parts_with_colons() -> None:
    assert operation_id("wf-7", "review", "run-2") == "wf-7:review:run-2"


def test_an_attempt_id_appends_the_attempt_number() -> None:
    assert attempt_id("wf-7:review:run-2", 3) == "wf-7:review:run-2:attempt_3"


@given(workflow=PART, task=PART, run=PART)
def test_an_operation_id_parses_back_into_its_parts(workflow: str, task: str, run: str) -> None:
    parts = parse_operation_id(operation_id(workflow, task, run))
    assert parts == OperationIdParts(workflow_id=workflow, task_id=task, task_run_id=run)
    assert parts.operation_id == operation_id(workflow, task, run)


@given(workflow=PART, task=PART, run=PART, n=st.integers(min_value=1, max_value=10**9))
def test_an_attempt_id_parses_back_into_its_operation_and_number(
    workflow: str, task: str, run: str, n: int
) -> None:
    op = operation_id(workflow, task, run)
    parts = parse_attempt_id(attempt_id(op, n))
    assert parts == AttemptIdParts(operation_id=op, n=n)
    assert parts.attempt_id == attempt_id(op, n)


@pytest.mark.parametrize(
    ("parts", "where"),
    [
        (("", "t", "r"), "workflow_id"),
        (("w", "", "r"), "task_id"),
        (("w", "t", ""), "task_run_id"),
        (("w:x", "t", "r"), "workflow_id"),
        (("w", "t:x", "r"), "task_id"),
        (("w", "t", "r:x"), "task_run_id"),
        (("w", "t\n", "r"), "task_id"),
        ((None, "t", "r"), "workflow_id"),
    ],
)
def test_a_bad_part_is_refused_naming_it(parts: tuple[str, str, str], where: str) -> None:
    with pytest.raises(ConfigError) as info:
        operation_id(*parts)
    assert info.value.where == where


@pytest.mark.parametrize("n", [0, -1, 1.0, True, "1"], ids=repr)
def test_an_attempt_number_below_one_or_not_whole_is_refused(n: object) -> None:
    with pytest.raises(ConfigError) as info:
        attempt_id("w:t:r", n)  # type: ignore[arg-type]
    assert info.value.where == "n"


def test_an_attempt_of_an_invalid_operation_id_is_refused() -> None:
    with pytest.raises(ConfigError) as info:
        attempt_id("w:t", 1)
    assert info.value.where == "operation_id"


@pytest.mark.parametrize("text", ["w:t", "w:t:r:x", "", "w::r", 7])
def test_a_malformed_operation_id_does_not_parse(text: object) -> None:
    with pytest.raises(ConfigError) as info:
        parse_operation_id(text)  # type: ignore[arg-type]
    assert str(info.value.where).startswith("operation_id")


@pytest.mark.parametrize(
    "text",
    [
        "w:t:r",
        "w:t:r:attempt_0",
        "w:t:r:attempt_01",
        "w:t:r:attempt_",
        "w:t:r:attempt_x",
        "w:t:r:try_1",
        "w:t:attempt_1",
        "w:t:r:attempt_١",
        "attempt_1",
    ],
)
def test_a_malformed_attempt_id_does_not_parse(text: str) -> None:
    with pytest.raises(ConfigError):
        parse_attempt_id(text)
