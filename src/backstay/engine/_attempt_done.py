"""What one attempt of the engine produced (``AttemptDone``), and how the driver writes it
down: a success's stored result, ``metrics.json``'s exit status, an escalation's context."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Final

from backstay.adapters.contract import TIMEOUT_EXIT_CODE, AgentResult
from backstay.adapters.usage import Usage
from backstay.engine.fallback import TaskFallback, model_keys
from backstay.engine.task import TaskSpec
from backstay.failure import Failure
from backstay.redact import redact
from backstay.taxonomy import FailureKind

__all__ = ["AttemptDone", "escalation_context", "exit_status", "result_data"]

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


def result_data(result: AgentResult, usage: Usage, model: Mapping[str, str]) -> dict[str, Any]:
    return {
        **model,
        "output": result.output,
        "usage": dataclasses.asdict(usage),
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
    partial = redact(done.partial_output or "")[-_CONTEXT_OUTPUT_CHARS:]
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
