"""The event log writes each line as it always did: ``redact`` of the JSON of ``at`` and
the event's ``to_dict`` walked by ``redact_personal_mapping``, byte for byte, for the
events of a batch and for events carrying secrets and personal data."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from backstay.adapters.usage import Usage
from backstay.engine.events import (
    AttemptEnded,
    AttemptFailedEnded,
    TaskFailed,
    TaskPaused,
    TaskStarted,
    TaskSucceeded,
)
from backstay.events import Event, RetryScheduled
from backstay.failure import Failure
from backstay.observe import EventLog
from backstay.redact import redact, redact_personal_mapping, register_secret
from backstay.testing import FakeClock

CANARY = "sk-ant-api03-loglines-canary-abcdefghijklmnop"
OP = "wf-20261129T024625Z-68f56a:jane.doe@example.com:T0-run_01"
NAMES: dict[str, Any] = {
    "adapter": "anthropic-api",
    "model": "claude-sonnet-4-5",
    "requested_adapter": "anthropic-api",
    "requested_model": "claude-sonnet-4-5",
}


def _reference(event: Event, clock: FakeClock) -> str:
    data = {"at": clock.now().isoformat(), **redact_personal_mapping(event.to_dict())}
    return redact(json.dumps(data, default=str))


def _events() -> list[Event]:
    register_secret(CANARY)
    failure = Failure(
        code="ERR_AUTH_INVALID_KEY",
        message=f"bad key {CANARY}, call +44 20 7946 0958",
        details={"api_key": "abc", "to": ["jane.doe@example.com"], "n": 3},
    )
    usage = Usage(input_tokens=3, output_tokens=8, cost_usd=0.000129, api_calls=1)
    common: dict[str, Any] = {"operation": OP, "policy": "standard", "task_id": "t0"}
    return [
        TaskStarted(**common, attempt=1, attempt_id=f"{OP}:attempt_1", **NAMES),
        AttemptEnded(
            **common,
            attempt=1,
            attempt_id=f"{OP}:attempt_1",
            **NAMES,
            outcome="succeeded",
            duration_s=0.004512,
            usage=usage,
        ),
        AttemptFailedEnded(
            **common,
            attempt=2,
            attempt_id=f"{OP}:attempt_2 token: \ncaf\u00e9-secret",
            **NAMES,
            outcome="failed",
            duration_s=1.5,
            usage=Usage(),
            failure=failure,
            delay_s=2.0,
        ),
        TaskSucceeded(**common, attempts=1),
        TaskFailed(
            **common, attempts=3, reason=f"password=hunter2hunter2 {CANARY}", failure=failure
        ),
        TaskPaused(
            **common,
            reason="quota",
            resumes_at=dt.datetime(2026, 11, 29, 3, 0, tzinfo=dt.UTC),
            failure=failure,
        ),
        RetryScheduled(operation=OP, attempt=1, delay_s=1.0, failure=failure),
    ]


def test_each_line_is_the_one_written_before(tmp_path: Path) -> None:
    clock = FakeClock()
    path = tmp_path / "events.jsonl"
    events = _events()
    expected = []
    with EventLog(path, clock=clock) as log:
        for event in events:
            expected.append(_reference(event, clock))
            log.emit(event)
            clock.advance(0.25)
    assert path.read_text(encoding="utf-8").splitlines() == expected
    text = path.read_text(encoding="utf-8")
    assert CANARY not in text
    assert "jane.doe@example.com" not in text
    assert "hunter2hunter2" not in text
