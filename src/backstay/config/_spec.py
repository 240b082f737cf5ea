"""The keys of ``backstay.yaml``: every section, every setting, its type and its limits.

These tables are the single description of the file: the loader checks input against
them, ``backstay config schema`` renders them as JSON Schema, and docs/config.md lists
them. Cross-field rules (``max_delay_s >= initial_delay_s`` …) stay with the objects that
own them (``RetryPolicy``), which the loader builds afterwards.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from backstay.config._fields import Field
from backstay.policy.backoff import Backoff, JitterMode
from backstay.policy.registry import OperationType
from backstay.taxonomy import ErrorCategory, FailureKind

# Policy names are addressed by --set paths and BACKSTAY__ variables: no dots, no spaces.
POLICY_NAME_PATTERN: Final = r"^[A-Za-z][A-Za-z0-9_-]*$"
# "provider" or "provider/model"; a model name may hold dots, colons and slashes.
# provider, provider/model, either with #<fingerprint> of one API key (policy/limit_keys.py).
RATE_LIMIT_KEY_PATTERN: Final = r"^[A-Za-z0-9][A-Za-z0-9_.-]*(/[^\s#]+)?(#[0-9a-f]{12})?$"

TOP_LEVEL: Final[Mapping[str, str]] = {
    "retry": "Retry policies, which operation uses which, and the shared guards.",
    "frameworks": "Agent frameworks run under backstay's runtime: limits, safety, approvals.",
    "observe": "What watches a batch: OpenTelemetry export (docs/observability.md).",
    "store": "Where batch state lives: a state directory (SQLite, the default) or "
    "redis://host:port/db shared by every machine; or a mapping of url and unavailable "
    "(stop or wait: what a batch does when Redis stops answering). docs/scale-out.md.",
}

OBSERVE_SECTION: Final[Mapping[str, str]] = {
    "otel": "OpenTelemetry traces and metrics over OTLP/HTTP; the OTEL_* environment "
    "variables apply as well (OTEL_SDK_DISABLED=true turns export off).",
    "metrics_port": "The port (127.0.0.1) batch and resume serve /metrics, /healthz and "
    "/readyz on when --serve-port is not given.",
    "log_level": "The level of backstay's logger in batch, resume and run (DEBUG, INFO, "
    "WARNING, ERROR); unset: logging's own.",
}

RETRY_SECTION: Final[Mapping[str, str]] = {
    "default_policy": "The policy for operations without one of their own (default: standard).",
    "policies": "Named retry policies. A policy named like a built-in one starts from its "
    "settings, without its per-kind and per-category limits (`extends` with its own name "
    "keeps them); `extends` starts from another.",
    "operation_policies": "Operation type → policy name.",
    "circuit_breaker": "When a circuit opens and how it recovers.",
    "budget": "The retry budget: how many retries the calls may add in all.",
    "rate_limits": "Client-side rate limits per provider or provider/model.",
}

OPERATION_TYPES: Final[tuple[str, ...]] = tuple(op.value for op in OperationType)

POLICY_FIELDS: Final[Mapping[str, Field]] = {
    "extends": Field(
        type="string",
        help="Another policy (from this file or built in) whose settings this one starts from.",
    ),
    "max_attempts": Field(
        type="integer", minimum=1, help="Attempts in all, the first one included."
    ),
    "backoff": Field(
        type="string",
        choices=tuple(b.value for b in Backoff),
        help="How the delay grows from one retry to the next.",
    ),
    "initial_delay_s": Field(type="number", minimum=0, help="Delay before the first retry (s)."),
    "max_delay_s": Field(
        type="number",
        minimum=0,
        help="Cap on any one delay (s); at least `initial_delay_s`.",
    ),
    "multiplier": Field(type="number", minimum=1, help="Growth factor of exponential backoff."),
    "jitter": Field(
        type="number", minimum=0, maximum=1, help="Random spread, as a fraction of the delay."
    ),
    "jitter_mode": Field(
        type="string",
        choices=tuple(j.value for j in JitterMode),
        help="How the random spread is drawn.",
    ),
    "retry_on": Field(
        type="kinds_or_codes",
        help="Retry only these failure kinds or ERR_* codes (empty: every retryable failure).",
    ),
    "never_retry_on": Field(
        type="kinds_or_codes",
        help="Never retry these failure kinds or ERR_* codes, retryable or not.",
    ),
    "max_retry_after_s": Field(
        type="number",
        minimum=0,
        help="Longest Retry-After wait honoured (s); a longer one gives up at once.",
    ),
    "deadline_s": Field(
        type="number",
        minimum=0,
        nullable=True,
        help="Time allowed for the call, all attempts and waits included (s); null: none.",
    ),
    "seed": Field(type="integer", nullable=True, help="Seed of the jitter draws (null: unseeded)."),
    "escalate_on_exhaustion": Field(
        type="boolean",
        help="When the attempts run out, escalate the task to a human instead of failing it.",
    ),
    "timeout_factor": Field(
        type="number",
        minimum=1,
        help="A retry after a timeout gets the attempt timeout × this, per timeout so far.",
    ),
}

PER_KIND_HELP: Final = (
    "Per failure kind: `max_attempts` caps the policy's, the delays and the multiplier "
    "replace the policy's for that kind."
)

KIND_OVERRIDE_FIELDS: Final[Mapping[str, Field]] = {
    "max_attempts": Field(
        type="integer", minimum=1, help="Attempts in all for this kind (caps the policy's)."
    ),
    "initial_delay_s": Field(type="number", minimum=0, help="Delay before the first retry (s)."),
    "max_delay_s": Field(type="number", minimum=0, help="Cap on any one delay (s)."),
    "multiplier": Field(type="number", minimum=1, help="Growth factor of exponential backoff."),
}

KIND_NAMES: Final[tuple[str, ...]] = tuple(kind.value for kind in FailureKind)

PER_CATEGORY_HELP: Final = (
    "Per error-contract category (the code's, e.g. TRANSIENT for an HTTP 503): the same "
    "settings as per_kind, consulted first; per_kind applies when a category has none."
)

CATEGORY_NAMES: Final[tuple[str, ...]] = tuple(category.value for category in ErrorCategory)

CIRCUIT_BREAKER_FIELDS: Final[Mapping[str, Field]] = {
    "enabled": Field(type="boolean", help="false: no circuit breakers at all (default: true)."),
    "failure_threshold": Field(
        type="integer",
        minimum=1,
        nullable=True,
        help="Consecutive counted failures that open the circuit (null: rule off).",
    ),
    "failure_rate_threshold": Field(
        type="number",
        minimum=0,
        exclusive_minimum=True,
        maximum=1,
        nullable=True,
        help="Share of counted failures in the window that opens the circuit, in (0, 1] "
        "(null: rule off).",
    ),
    "window_kind": Field(
        type="string",
        choices=("count", "time"),
        help="The failure-rate window: the last window_calls calls, or the last window_s seconds.",
    ),
    "window_calls": Field(
        type="integer",
        minimum=1,
        maximum=1000,
        help="Calls in the failure-rate window (count window).",
    ),
    "window_s": Field(
        type="number",
        minimum=0,
        exclusive_minimum=True,
        help="Length of the failure-rate window (time window, s).",
    ),
    "minimum_calls": Field(
        type="integer",
        minimum=1,
        help="Calls the window must hold before the failure rate can open the circuit.",
    ),
    "open_duration_s": Field(
        type="number", minimum=0, help="How long the circuit stays open before probing (s)."
    ),
    "half_open_max_probes": Field(
        type="integer", minimum=1, help="Calls let through at once while half-open."
    ),
    "success_threshold": Field(
        type="integer", minimum=1, help="Probe successes that close the circuit again."
    ),
    "probe_timeout_s": Field(
        type="number",
        minimum=0,
        exclusive_minimum=True,
        help="A probe that never reports frees its slot after this long (s).",
    ),
    "counted_kinds": Field(
        type="kinds",
        excluded=(FailureKind.CANCELLED.value,),
        help="Failure kinds that count towards opening (cancelled never counts).",
    ),
}

BUDGET_FIELDS: Final[Mapping[str, Field]] = {
    "ratio": Field(
        type="number",
        minimum=0,
        maximum=1,
        help="Retries allowed as a fraction of calls in the window (0.1: one retry per ten calls).",
    ),
    "min_retries_per_s": Field(
        type="number",
        minimum=0,
        help="Retries per second allowed whatever the ratio (keeps low traffic retrying).",
    ),
    "window_s": Field(
        type="number",
        minimum=0,
        exclusive_minimum=True,
        help="How long a call counts towards the ratio (s).",
    ),
    "buckets": Field(
        type="integer",
        minimum=1,
        maximum=1000,
        help="Buckets the window is counted in (finer: smoother expiry).",
    ),
}

RATE_LIMIT_FIELDS: Final[Mapping[str, Field]] = {
    "requests_per_minute": Field(
        type="number", minimum=0, exclusive_minimum=True, help="Requests per minute."
    ),
    "tokens_per_minute": Field(
        type="number", minimum=0, exclusive_minimum=True, help="Tokens per minute."
    ),
    "burst_s": Field(
        type="number",
        minimum=0,
        exclusive_minimum=True,
        help="Seconds of refill a bucket holds (how big a burst may be).",
    ),
    "max_block_s": Field(
        type="number",
        minimum=0,
        help="The longest a provider's wait may block every caller of the limiter (s).",
    ),
    "probe_timeout_s": Field(
        type="number",
        minimum=0,
        help="With neither limit set: the longest the first request holds the others while "
        "the provider's limits are discovered (s; 0: no discovery).",
    ),
}

OBSERVE_FIELDS: Final[Mapping[str, Field]] = {
    "metrics_port": Field(
        type="integer",
        minimum=0,
        maximum=65535,
        nullable=True,
        help=OBSERVE_SECTION["metrics_port"],
    ),
    "log_level": Field(
        type="string",
        choices=("DEBUG", "INFO", "WARNING", "ERROR"),
        nullable=True,
        help=OBSERVE_SECTION["log_level"],
    ),
}

OTEL_FIELDS: Final[Mapping[str, Field]] = {
    "enabled": Field(
        type="boolean",
        nullable=True,
        help="Export (true) or not (false); null: when an OTEL_EXPORTER_OTLP_ENDPOINT variable "
        "is set or the application has its own TracerProvider.",
    ),
    "service_name": Field(
        type="string", help="service.name of the exported resource when OTEL_SERVICE_NAME is unset."
    ),
    "endpoint": Field(
        type="string",
        help="The OTLP/HTTP base URL when no OTEL_EXPORTER_OTLP_ENDPOINT variable names one.",
    ),
    "capture_content": Field(
        type="boolean",
        help="Add failure messages (which may quote a provider's text) to spans, redacted.",
    ),
}
