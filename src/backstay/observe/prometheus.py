"""``/metrics``: the Prometheus exposition of a batch, computed in one process from a
``StateSnapshot`` (and, while the batch runs in this process, its ``LiveCounters``).

Every scrape recomputes the figures from the state file, so a server that starts after
the batch (``backstay serve``) shows the same counters as one serving it while it runs,
and no per-process files exist. No label names a task: the labels are adapters
(``framework``), models, providers, states, failure kinds and circuits.

| metric | type | labels |
|---|---|---|
| ``agent_step_duration_seconds`` | histogram | framework, step_type |
| ``agent_step_total`` | counter | framework, status |
| ``agent_tokens_consumed`` | counter | framework, model |
| ``agent_active_sessions`` | gauge | framework |
| ``backstay_tasks`` | gauge | state |
| ``backstay_tasks_paused`` | gauge | reason (budget_exceeded, other) |
| ``backstay_attempts_total`` | counter | adapter, model, outcome |
| ``backstay_retries_total`` | counter | kind |
| ``backstay_failures_total`` | counter | kind |
| ``backstay_tokens_total`` | counter | type, provider, model |
| ``backstay_cost_usd_total`` | counter | provider, model |
| ``backstay_circuit_state`` | gauge | circuit (0 closed, 1 half-open, 2 open) |
| ``backstay_escalations_open`` | gauge | |
| ``backstay_waits_total`` | counter | reason |
| ``backstay_wait_seconds_total`` | counter | reason |
| ``backstay_events_total`` | counter | event (live only) |
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator
from typing import Final

from backstay.engine.circuit_log import CircuitChange, CircuitEntry
from backstay.engine.records import AttemptOutcome, AttemptRecord, EscalationStatus
from backstay.engine.states import TaskState
from backstay.engine.task import TaskSpec
from backstay.observe._exposition import CONTENT_TYPE, Exposition, Histogram, Labels, counts, sums
from backstay.observe.genai import provider_name, step_type
from backstay.observe.live import LiveCounters
from backstay.observe.snapshot import StateSnapshot
from backstay.policy.spend import BUDGET_EXCEEDED

__all__ = ["CIRCUIT_STATES", "CONTENT_TYPE", "STEP_BUCKETS_S", "render_metrics"]

# The GenAI conventions' duration buckets (0.01 … 81.92 s, powers of two), then the
# minutes an agent CLI run lasts, up to an hour.
STEP_BUCKETS_S: Final = (
    *(0.01 * 2**i for i in range(14)),
    300.0,
    600.0,
    1200.0,
    1800.0,
    3600.0,
)
CIRCUIT_STATES: Final = {
    CircuitChange.CLOSED: 0.0,
    CircuitChange.HALF_OPENED: 1.0,
    CircuitChange.OPENED: 2.0,
}
_TOKEN_TYPES: Final = (
    ("input", "input_tokens"),
    ("output", "output_tokens"),
    ("cache_read", "cache_read_tokens"),
    ("cache_write", "cache_write_tokens"),
)


def circuit_states(entries: tuple[CircuitEntry, ...]) -> dict[str, float]:
    """Each circuit's state by its last change: 0 closed, 1 half-open, 2 open."""
    out: dict[str, float] = {}
    for entry in entries:
        value = CIRCUIT_STATES.get(entry.change)
        if value is not None:
            out[entry.breaker] = value
    return out


def _attempts(
    snap: StateSnapshot,
) -> Iterator[tuple[AttemptRecord, TaskSpec]]:
    specs = {task.operation_id: task.spec for task in snap.tasks}
    for attempt in snap.attempts:
        spec = specs.get(attempt.operation_id)
        if spec is not None:
            yield attempt, spec


def _waits(
    snap: StateSnapshot, live: LiveCounters | None
) -> tuple[dict[str, int], dict[str, float]]:
    n: Counter[str] = Counter()
    seconds: defaultdict[str, float] = defaultdict(float)
    for attempt in snap.attempts:
        if attempt.failure is not None and attempt.delay_s:
            reason = "backoff" if attempt.failure.retry_after_s is None else "retry_after"
            n[reason] += 1
            seconds[reason] += attempt.delay_s
    for entry in snap.circuits:
        if entry.change is CircuitChange.WAITED:
            n["circuit_open"] += 1
            seconds["circuit_open"] += entry.wait_s or 0.0
    if live is not None:
        for reason, (count, waited) in live.waits().items():
            n[reason] += count
            seconds[reason] += waited
    return dict(n), dict(seconds)


def render_metrics(snap: StateSnapshot, live: LiveCounters | None = None) -> str:
    """The exposition (``CONTENT_TYPE``) of ``snap``, plus ``live``'s counts if given."""
    out = Exposition()
    pairs = list(_attempts(snap))
    steps: dict[Labels, Histogram] = {}
    for attempt, spec in pairs:
        if attempt.ended_at is None:
            continue
        labels = (("framework", spec.adapter), ("step_type", step_type(spec.adapter)))
        hist = steps.get(labels)
        if hist is None:
            hist = steps[labels] = Histogram(STEP_BUCKETS_S)
        hist.observe(max((attempt.ended_at - attempt.started_at).total_seconds(), 0.0))
    out.histogram(
        "agent_step_duration_seconds", "How long each attempt (a step) took, in seconds.", steps
    )
    out.family(
        "agent_step_total",
        "counter",
        "Attempts (steps) by adapter and outcome.",
        counts((("framework", spec.adapter), ("status", str(a.outcome))) for a, spec in pairs),
    )
    out.family(
        "agent_tokens_consumed",
        "counter",
        "Tokens consumed (prompt and output) by adapter and model.",
        sums(
            ((("framework", spec.adapter), ("model", spec.model)), float(a.usage.tokens_total))
            for a, spec in pairs
        ),
    )
    active = counts(
        (("framework", t.spec.adapter),) for t in snap.tasks if t.state is TaskState.RUNNING
    )
    for adapter in {t.spec.adapter for t in snap.tasks}:
        active.setdefault((("framework", adapter),), 0.0)
    out.family("agent_active_sessions", "gauge", "Tasks running an attempt now.", active)
    by_state = counts((("state", str(t.state)),) for t in snap.tasks)
    for state in TaskState:
        by_state.setdefault((("state", str(state)),), 0.0)
    out.family("backstay_tasks", "gauge", "Tasks by state.", by_state)
    paused = counts(
        (("reason", BUDGET_EXCEEDED if t.reason.startswith(BUDGET_EXCEEDED) else "other"),)
        for t in snap.tasks
        if t.state is TaskState.PAUSED
    )
    for reason in (BUDGET_EXCEEDED, "other"):
        paused.setdefault((("reason", reason),), 0.0)
    out.family(
        "backstay_tasks_paused",
        "gauge",
        "Paused tasks by reason (budget_exceeded: a spending budget had no room).",
        paused,
    )
    out.family(
        "backstay_attempts_total",
        "counter",
        "Attempts by adapter, model and outcome.",
        counts(
            (("adapter", spec.adapter), ("model", spec.model), ("outcome", str(a.outcome)))
            for a, spec in pairs
        ),
    )
    failed = [a for a, _ in pairs if a.outcome is AttemptOutcome.FAILED and a.failure]
    out.family(
        "backstay_failures_total",
        "counter",
        "Failed attempts by failure kind.",
        counts((("kind", str(a.failure.kind)),) for a in failed if a.failure),
    )
    out.family(
        "backstay_retries_total",
        "counter",
        "Retries scheduled after a failed attempt, by failure kind.",
        counts(
            (("kind", str(a.failure.kind)),) for a in failed if a.failure and a.delay_s is not None
        ),
    )
    tokens: list[tuple[Labels, float]] = []
    cost: list[tuple[Labels, float]] = []
    for a, spec in pairs:
        provider = provider_name(spec.adapter, spec.model)
        for kind, field in _TOKEN_TYPES:
            value = getattr(a.usage, field)
            if value:
                tokens.append(
                    ((("type", kind), ("provider", provider), ("model", spec.model)), value)
                )
        if a.usage.cost_usd is not None:
            cost.append(((("provider", provider), ("model", spec.model)), a.usage.cost_usd))
    out.family(
        "backstay_tokens_total", "counter", "Tokens by type, provider and model.", sums(tokens)
    )
    out.family(
        "backstay_cost_usd_total", "counter", "Cost in USD by provider and model.", sums(cost)
    )
    out.family(
        "backstay_circuit_state",
        "gauge",
        "Each circuit's state: 0 closed, 1 half-open, 2 open.",
        {(("circuit", name),): v for name, v in circuit_states(snap.circuits).items()},
    )
    open_escalations = sum(1 for e in snap.escalations if e.status is EscalationStatus.OPEN)
    out.family(
        "backstay_escalations_open",
        "gauge",
        "Escalations waiting for a human.",
        {(): float(open_escalations)},
    )
    waits, waited = _waits(snap, live)
    out.family(
        "backstay_waits_total",
        "counter",
        "Waits by reason (backoff, retry_after, circuit_open, rate_limiter).",
        {(("reason", r),): float(n) for r, n in waits.items()},
    )
    out.family(
        "backstay_wait_seconds_total",
        "counter",
        "Seconds waited by reason.",
        {(("reason", r),): s for r, s in waited.items()},
    )
    if live is not None:
        out.family(
            "backstay_events_total",
            "counter",
            "Events emitted in this process, by name.",
            {(("event", name),): float(n) for name, n in live.events().items()},
        )
    return out.text()
