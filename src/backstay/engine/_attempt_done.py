"""One attempt of the engine: its dispatch (``dispatch``: the adapter called under a
``Capture``, any failure classified, ``metrics.json`` written), what it produced
(``AttemptDone``), and how the driver writes it down: a success's stored result (its
output redacted of credentials and personal data, as everything kept at rest),
``metrics.json``'s exit status, an escalation's context."""

from __future__ import annotations

import dataclasses
import datetime as _dt
from collections.abc import Mapping
from typing import Any, Final

from backstay.adapters.capture import Capture
from backstay.adapters.contract import TIMEOUT_EXIT_CODE, Adapter, AgentRequest, AgentResult
from backstay.adapters.usage import Usage, usage_data
from backstay.classify import classify
from backstay.clock import Clock
from backstay.engine.fallback import TaskFallback, model_keys
from backstay.engine.task import TaskSpec
from backstay.errors import AdapterError
from backstay.failure import Failure
from backstay.redact import redact_personal
from backstay.taxonomy import FailureKind

__all__ = ["AttemptDone", "dispatch", "escalation_context", "exit_status", "result_data"]

# How much of a failed attempt's partial output an escalation keeps for its reader.
_CONTEXT_OUTPUT_CHARS: Final = 2000


@dataclasses.dataclass(frozen=True, slots=True)
class AttemptDone:
    """What one dispatch produced."""

    result: AgentResult | None
    failure: Failure | None
    partial_output: str | None
    usage: Usage
    exit_code: int | None
    # The rate-limit headers of the provider's last answer (API adapters), for the limiters.
    rate_limit_headers: Mapping[str, str] = dataclasses.field(default_factory=dict)


def result_data(result: AgentResult, usage: Usage, model: Mapping[str, str]) -> dict[str, Any]:
    """The result a success records, in the task store and the operation cache: the
    agent's output redacted (``redact_personal``), as everything kept at rest is."""
    return {
        **model,
        "output": redact_personal(result.output),
        "usage": usage_data(usage),
        "exit_code": result.exit_code,
        "duration_s": round(result.duration_s, 3),
        "artefacts": [str(p) for p in result.artefacts],
    }


def escalation_context(
    spec: TaskSpec,
    chain: TaskFallback | None,
    done: AttemptDone,
    *,
    number: int,
    output_dir: str,
    reason: str,
) -> dict[str, Any]:
    """What a human reading the escalation of attempt ``number`` is shown (redacted)."""
    partial = redact_personal(done.partial_output or "")[-_CONTEXT_OUTPUT_CHARS:]
    return {
        "task_id": spec.task_id,
        **model_keys(spec, chain),
        "attempt": number,
        "reason": reason,
        "output_dir": output_dir,
        "exit_code": done.exit_code,
        "partial_output": partial,
    }


def exit_status(result: AgentResult | None, failure: Failure | None, exit_code: int | None) -> int:
    """What ``metrics.json`` reports, as a harness does: 0, 124 on timeout, else the
    agent's own non-zero code or 1."""
    if result is not None:
        return 0
    if failure is not None and failure.kind is FailureKind.TIMEOUT:
        return TIMEOUT_EXIT_CODE
    return exit_code or 1


async def dispatch(
    adapter: Adapter,
    request: AgentRequest,
    *,
    operation_id: str,
    attempt_id: str,
    clock: Clock,
    started_at: _dt.datetime,
    metrics: Mapping[str, Any],
) -> AttemptDone:
    """Run one attempt of ``request`` through ``adapter``, capturing into its
    ``output_dir``: an ``AdapterError`` gives its ``Failure``, any other exception is
    classified; ``metrics.json`` is written with ``metrics`` added (the model keys)."""
    started = clock.monotonic()
    with Capture(request.output_dir) as capture:
        result: AgentResult | None = None
        failure: Failure | None = None
        partial: str | None = None
        try:
            result = await adapter.dispatch(
                request, operation_id=operation_id, attempt_id=attempt_id, capture=capture
            )
        except AdapterError as err:
            failure, partial = err.failure, err.partial_output
        except Exception as exc:  # noqa: BLE001 - outside the contract: classified, not fatal
            failure = classify(exc)
        usage = result.usage if result is not None else capture.usage
        exit_code = result.exit_code if result is not None else capture.exit_code
        capture.write_metrics(
            usage=usage,
            duration_s=clock.monotonic() - started,
            exit_code=exit_status(result, failure, exit_code),
            failure=failure,
            started_at=started_at,
            ended_at=clock.now(),
            durable=False,  # state.sqlite holds the attempt durably; this is its view
            extra=metrics,
        )
    headers = dict(capture.rate_limit_headers)
    return AttemptDone(result, failure, partial, usage, exit_code, headers)
