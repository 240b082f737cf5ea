"""An agent task behind a gateway whose own failures opened the model's circuit: the
engine's wait before the next attempt honours the circuit's next probe.

The gateway answers a request that meets an open circuit with a 503 whose message says
``circuit '…' is open; next probe in N s`` (``CircuitOpen``); the agent CLI prints it and
its failure is classified with that wait as its ``retry_after_s``. ``agent_dispatch``
waits that long instead of its 2 / 4 / 8 s, so its next attempt is the circuit's probe
rather than another refusal; when the probe lies past the policy's deadline the task
gives up at once.

The stand-in adapter goes through a real ``CircuitBreaker`` (the gateway's, on the
engine's fake clock) and fails with what Claude Code prints of the gateway's real 503.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Final

import pytest
from tests.engine.support import clock, engine, spec

from backstay import classify_output, testing
from backstay.adapters.capture import Capture
from backstay.adapters.contract import AgentRequest, AgentResult, AgentStatus
from backstay.breaker import BreakerSettings, CircuitBreaker
from backstay.engine import TaskState
from backstay.errors import CircuitOpen
from backstay.failure import Failure
from backstay.gateway.wire_errors import gateway_error
from backstay.policy.builtin import AGENT_DISPATCH
from backstay.policy.retry import RETRY_AFTER_MARGIN_S
from backstay.testing import FakeClock

SETTINGS: Final = BreakerSettings()
OVERLOADED: Final = Failure(code="ERR_HTTP_529_OVERLOADED")


def _claude_code_output(status: int, body: bytes) -> str:
    """Claude Code's ``--output-format json`` result for an API error it did not retry."""
    return json.dumps(
        {
            "type": "result",
            "subtype": "success",
            "is_error": True,
            "result": f"API Error: {status} {body.decode()}",
        }
    )


class BehindGateway(testing.ScriptedAdapter):
    """Each attempt is one session's request through the gateway's breaker: the first
    fails five times upstream (the gateway's retries, its last allowed attempt the one that
    opens the circuit, so it is handed that 529: ``gateway.probe`` waits for the probe only
    with an attempt left); a request the open circuit refuses gets the gateway's 503; a
    request let through (the probe) succeeds."""

    name: ClassVar[str] = "fake"

    def __init__(self, breaker: CircuitBreaker, fake: FakeClock) -> None:
        super().__init__()
        self.breaker = breaker
        self.fake = fake
        self.attempts: list[tuple[float, str]] = []

    def validate_config(self, config: Mapping[str, Any]) -> bool:
        return True

    async def execute(
        self, request: AgentRequest, *, operation_id: str, attempt_id: str, capture: Capture
    ) -> AgentResult:
        at = self.fake.monotonic()
        try:
            permit = self.breaker.acquire()
        except CircuitOpen as refused:
            self.attempts.append((at, "refused"))
            answer = gateway_error(
                "anthropic", 503, str(refused), retry_after_s=refused.retry_after_s
            )
            output = _claude_code_output(answer.status, answer.body)
            return AgentResult.failed(classify_output(output, agent="claude-code", exit_code=1))
        if not self.attempts:
            permit.failure(OVERLOADED)
            assert SETTINGS.failure_threshold is not None
            for _ in range(SETTINGS.failure_threshold - 1):
                self.breaker.acquire().failure(OVERLOADED)
            self.attempts.append((at, "opened"))
            body = b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'
            output = _claude_code_output(529, body)
            return AgentResult.failed(classify_output(output, agent="claude-code", exit_code=1))
        permit.success()
        self.attempts.append((at, "probe"))
        return AgentResult(status=AgentStatus.SUCCEEDED, output="done")


def test_the_next_attempt_after_a_refusal_waits_for_the_circuits_probe(tmp_path: Path) -> None:
    fake = clock()
    breaker = CircuitBreaker("anthropic/m", settings=SETTINGS, clock=fake)
    adapter = BehindGateway(breaker, fake)
    with engine(tmp_path, adapter, fake=fake, concurrency=1) as eng:
        eng.run_sync([spec(tmp_path, policy=AGENT_DISPATCH)])
        record = eng.store.task("wf:t1:run_01")
    assert record is not None
    assert (record.state, record.attempts_used) == (TaskState.SUCCEEDED, 3), record.reason
    (opened_at, _), (refused_at, _), (probe_at, _) = adapter.attempts
    assert [what for _, what in adapter.attempts] == ["opened", "refused", "probe"]
    # agent_dispatch's 2 s after the 529 met the open circuit; the refusal's wait was the
    # rest of the open window (not 4 s), so the third attempt was the probe.
    assert refused_at - opened_at == pytest.approx(AGENT_DISPATCH.initial_delay_s)
    assert probe_at - opened_at >= SETTINGS.open_duration_s
    assert probe_at - opened_at == pytest.approx(
        SETTINGS.open_duration_s + RETRY_AFTER_MARGIN_S, abs=0.01
    )


def test_a_probe_past_the_policys_deadline_gives_up_at_once(tmp_path: Path) -> None:
    fake = clock()
    breaker = CircuitBreaker("anthropic/m", settings=SETTINGS, clock=fake)
    adapter = BehindGateway(breaker, fake)
    policy = AGENT_DISPATCH.derive(name="short", deadline_s=SETTINGS.open_duration_s / 2)
    with engine(tmp_path, adapter, fake=fake, concurrency=1) as eng:
        eng.run_sync([spec(tmp_path, policy=policy)])
        record = eng.store.task("wf:t1:run_01")
    assert record is not None
    assert record.state is TaskState.FAILED
    assert "deadline" in record.reason
    assert [what for _, what in adapter.attempts] == ["opened", "refused"]
