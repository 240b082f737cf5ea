"""``Event.to_dict`` reads each class's field names once (``field_names``): the same dict
as reading ``dataclasses.fields`` at every call, for every event class."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

import pytest

from backstay.adapters.usage import Usage
from backstay.engine.events import (
    AttemptEnded,
    AttemptFailedEnded,
    TaskEscalated,
    TaskPaused,
    TaskStarted,
    TaskSucceeded,
)
from backstay.events import Event
from backstay.events.event import field_names
from backstay.failure import Failure

USAGE = Usage(input_tokens=3, output_tokens=8, cache_read_tokens=2, cost_usd=0.000129, api_calls=1)
COMMON: dict[str, Any] = {"operation": "wf:t1:run_01", "policy": "standard", "task_id": "t1"}


def _reference(event: Event) -> dict[str, Any]:
    """What ``to_dict`` gave: the fields read at each call, a usage as ``asdict``."""
    out: dict[str, Any] = {"event": event.name}
    for field in dataclasses.fields(event):
        value = getattr(event, field.name)
        if isinstance(value, Failure):
            value = value.to_dict()
        elif isinstance(value, Usage):
            value = dataclasses.asdict(value)
        elif isinstance(value, dt.datetime):
            value = value.isoformat()
        out[field.name] = value
    return out


EVENTS = [
    Event(operation="wf:t1:run_01"),
    TaskStarted(**COMMON, attempt=1, attempt_id="wf:t1:run_01:attempt_1", adapter="a", model="m"),
    AttemptEnded(
        **COMMON,
        attempt=1,
        attempt_id="wf:t1:run_01:attempt_1",
        adapter="a",
        model="m",
        outcome="succeeded",
        duration_s=0.5,
        usage=USAGE,
    ),
    AttemptFailedEnded(
        **COMMON,
        attempt=2,
        attempt_id="wf:t1:run_01:attempt_2",
        adapter="a",
        model="m",
        outcome="failed",
        duration_s=0.5,
        usage=Usage(),
        failure=Failure(code="ERR_HTTP_500_INTERNAL"),
        delay_s=1.0,
    ),
    TaskPaused(
        **COMMON,
        reason="quota",
        resumes_at=dt.datetime(2026, 11, 29, 3, 0, tzinfo=dt.UTC),
        failure=Failure(code="ERR_LLM_DAILY_QUOTA"),
    ),
    TaskPaused(
        **COMMON, reason="quota", resumes_at=None, failure=Failure(code="ERR_HTTP_500_INTERNAL")
    ),
    TaskSucceeded(**COMMON, attempts=2, from_cache=True),
    TaskEscalated(
        **COMMON, escalation_id=3, reason="why", failure=Failure(code="ERR_HTTP_500_INTERNAL")
    ),
]


@pytest.mark.parametrize("event", EVENTS, ids=lambda e: type(e).__name__)
def test_an_event_s_dict_is_its_fields_in_order(event: Event) -> None:
    for _ in range(2):  # the names kept for the class the second time
        out = event.to_dict()
        assert out == _reference(event)
        assert list(out) == list(_reference(event))


def test_the_field_names_are_the_dataclass_s_in_order() -> None:
    assert field_names(AttemptEnded) == tuple(f.name for f in dataclasses.fields(AttemptEnded))
    assert field_names(AttemptEnded) is field_names(AttemptEnded)
    assert field_names(Usage)[-1] == "api_calls"


def test_a_usage_in_an_event_is_a_copy_of_its_numbers() -> None:
    out = EVENTS[2].to_dict()["usage"]
    assert out == dataclasses.asdict(USAGE)
    out["input_tokens"] = 99
    assert USAGE.input_tokens == 3
