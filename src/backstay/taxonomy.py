"""The closed failure taxonomy: what went wrong out there, in one provider-neutral shape.

``FailureKind`` is the closed set of kinds; every ``ERR_*`` code belongs to exactly one
kind and has exactly one retryability, so the same code always decides the same way. The
value built from them, ``Failure``, lives in ``backstay.failure``.

These are descriptions of failures, not exceptions: backstay's own exceptions live in
``backstay.errors``.

(Just over 500 lines: the file is the closed taxonomy's tables — kinds, categories, every
code and its spellings — which are read and checked as one; no logic lives here.)
"""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Mapping
from typing import Any, Final

__all__ = [
    "CODES",
    "CODE_ALIASES",
    "CONTRACT_SPELLING",
    "HTTP_STATUS_CODE",
    "KINDS",
    "Action",
    "CodeInfo",
    "ErrorCategory",
    "FailureKind",
    "KindInfo",
    "canonical_code",
    "code_info",
]


class FailureKind(enum.StrEnum):
    """The closed set of failure kinds. Members never change meaning."""

    NETWORK = "network"
    TIMEOUT = "timeout"
    RATE_LIMIT = "rate_limit"
    SERVER_ERROR = "server_error"
    CONTEXT_LIMIT = "context_limit"
    CONTENT_POLICY = "content_policy"
    QUOTA_EXHAUSTED = "quota_exhausted"
    AUTH = "auth"
    INVALID_REQUEST = "invalid_request"
    OUTPUT_INVALID = "output_invalid"
    LIMIT_EXCEEDED = "limit_exceeded"
    SECURITY_VIOLATION = "security_violation"
    CANCELLED = "cancelled"
    UNKNOWN = "unknown"


class Action(enum.StrEnum):
    """What the engine does by default with a failure of a kind."""

    RETRY_BACKOFF = "retry_backoff"
    WAIT_AND_RETRY = "wait_and_retry"
    RETRY_WITH_FEEDBACK = "retry_with_feedback"
    RETRY_ONCE = "retry_once"
    FAIL = "fail"
    FAIL_AND_ESCALATE = "fail_and_escalate"
    FAIL_WITH_PARTIAL = "fail_with_partial"
    PAUSE_AND_ESCALATE = "pause_and_escalate"
    ABORT_AND_ESCALATE = "abort_and_escalate"
    CANCEL = "cancel"


class ErrorCategory(enum.StrEnum):
    """The ``category`` of the skill error contract (``Failure.to_error_info``)."""

    TRANSIENT = "TRANSIENT"
    RATE_LIMIT = "RATE_LIMIT"
    CLIENT_ERROR = "CLIENT_ERROR"
    SERVER_ERROR = "SERVER_ERROR"
    AUTH_FAIL = "AUTH_FAIL"
    NETWORK = "NETWORK"
    VALIDATION = "VALIDATION"
    RESOURCE = "RESOURCE"
    TIMEOUT = "TIMEOUT"
    PERMANENT = "PERMANENT"

    @property
    def letter(self) -> str:
        """The error contract's one-letter code of the category (``T``, ``R`` …, ``P``)."""
        return _CATEGORY_LETTERS[self]

    @classmethod
    def from_letter(cls, letter: str) -> ErrorCategory:
        """The category of a one-letter code; ``ValueError`` for another letter."""
        for category, known in _CATEGORY_LETTERS.items():
            if known == letter:
                return category
        raise ValueError(f"no error category has the letter {letter!r}")


_CATEGORY_LETTERS: Final[Mapping[ErrorCategory, str]] = {
    ErrorCategory.TRANSIENT: "T",
    ErrorCategory.RATE_LIMIT: "R",
    ErrorCategory.CLIENT_ERROR: "C",
    ErrorCategory.SERVER_ERROR: "S",
    ErrorCategory.AUTH_FAIL: "A",
    ErrorCategory.NETWORK: "N",
    ErrorCategory.VALIDATION: "V",
    ErrorCategory.RESOURCE: "X",
    ErrorCategory.TIMEOUT: "O",
    ErrorCategory.PERMANENT: "P",
}


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class KindInfo:
    """The defaults that belong to a kind."""

    kind: FailureKind
    retryable: bool
    action: Action
    summary: str
    category: ErrorCategory
    adapter_error_type: str


def _k(*row: Any) -> KindInfo:
    """One row of the kind table: kind, retryable, action, category, adapter type, summary."""
    kind, retryable, action, category, adapter_error_type, summary = row
    return KindInfo(
        kind=kind,
        retryable=retryable,
        action=action,
        summary=summary,
        category=category,
        adapter_error_type=adapter_error_type,
    )


_K = FailureKind
_A = Action
_C = ErrorCategory

KINDS: Final[Mapping[FailureKind, KindInfo]] = {
    info.kind: info
    for info in (
        _k(_K.NETWORK, True, _A.RETRY_BACKOFF, _C.NETWORK, "network", "retry with backoff"),
        _k(
            _K.TIMEOUT,
            True,
            _A.RETRY_BACKOFF,
            _C.TIMEOUT,
            "timeout",
            "retry with a longer timeout (the policy's timeout_factor)",
        ),
        _k(
            _K.RATE_LIMIT,
            True,
            _A.WAIT_AND_RETRY,
            _C.RATE_LIMIT,
            "rate_limit",
            "wait for Retry-After / the reset, then retry",
        ),
        _k(
            _K.SERVER_ERROR,
            True,
            _A.RETRY_BACKOFF,
            _C.SERVER_ERROR,
            "network",
            "retry with backoff",
        ),
        _k(
            _K.CONTEXT_LIMIT,
            False,
            _A.FAIL,
            _C.VALIDATION,
            "context_limit",
            'fail: "context_limit exceeded"',
        ),
        _k(
            _K.CONTENT_POLICY,
            False,
            _A.FAIL_AND_ESCALATE,
            _C.PERMANENT,
            "content_policy",
            "fail and escalate to a human",
        ),
        _k(
            _K.QUOTA_EXHAUSTED,
            False,
            _A.PAUSE_AND_ESCALATE,
            _C.RESOURCE,
            "quota_exhausted",
            "pause and escalate; resumable at resets_at when known",
        ),
        # Not "unknown": the adapter reliability contract retries an unknown error once.
        _k(_K.AUTH, False, _A.FAIL_AND_ESCALATE, _C.AUTH_FAIL, "auth", "fail and escalate"),
        _k(_K.INVALID_REQUEST, False, _A.FAIL, _C.CLIENT_ERROR, "invalid_request", "fail"),
        _k(
            _K.OUTPUT_INVALID,
            True,
            _A.RETRY_WITH_FEEDBACK,
            _C.TRANSIENT,
            "unknown",
            "retry with correction feedback, then fail",
        ),
        _k(
            _K.LIMIT_EXCEEDED,
            False,
            _A.FAIL_WITH_PARTIAL,
            _C.RESOURCE,
            "unknown",
            "fail with partial results",
        ),
        _k(
            _K.SECURITY_VIOLATION,
            False,
            _A.ABORT_AND_ESCALATE,
            _C.PERMANENT,
            "unknown",
            "abort and escalate",
        ),
        _k(
            _K.CANCELLED,
            False,
            _A.CANCEL,
            _C.PERMANENT,
            "unknown",
            "cancelled; never counted as a failure",
        ),
        _k(_K.UNKNOWN, True, _A.RETRY_ONCE, _C.TRANSIENT, "unknown", "retry once, then fail"),
    )
}


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CodeInfo:
    """One stable ``ERR_*`` code: its kind, its retryability, its error-contract category
    and what it means. ``category`` is the kind's unless the error contract's tables give
    the code another one (HTTP 422 and 503, the JSON codes, the ``_NO_RETRY`` codes)."""

    code: str
    kind: FailureKind
    retryable: bool
    description: str
    category: ErrorCategory


def _codes(kind: FailureKind, *rows: tuple[str, str]) -> list[CodeInfo]:
    info = KINDS[kind]
    return [
        CodeInfo(code=c, kind=kind, retryable=info.retryable, description=d, category=info.category)
        for c, d in rows
    ]


def _override(
    code: str,
    kind: FailureKind,
    retryable: bool,
    description: str,
    category: ErrorCategory | None = None,
) -> CodeInfo:
    return CodeInfo(
        code=code,
        kind=kind,
        retryable=retryable,
        description=description,
        category=KINDS[kind].category if category is None else category,
    )


# The codes whose row in the error contract's tables differs from their kind's defaults,
# and the codes it names that no provider classifier produces (JSON transforms, input
# validation, idempotency keys). The contract's own exception: its SSL row says NETWORK
# and not retryable, although NETWORK failures are retryable by its category rules.
_ERROR_CONTRACT_CODES: list[CodeInfo] = [
    _override("ERR_SSL_ERROR", _K.NETWORK, False, "the TLS handshake or session failed"),
    _override(
        "ERR_HTTP_503_UNAVAILABLE",
        _K.SERVER_ERROR,
        True,
        "HTTP 503 service unavailable",
        _C.TRANSIENT,
    ),
    _override(
        "ERR_HTTP_422_UNPROCESSABLE",
        _K.INVALID_REQUEST,
        False,
        "HTTP 422: the request is well-formed but invalid",
        _C.VALIDATION,
    ),
    *(
        _override(code, _K.INVALID_REQUEST, False, text, category)
        for code, category, text in (
            ("ERR_JSON_INVALID", _C.VALIDATION, "the input is not valid JSON"),
            ("ERR_JSON_PATH_INVALID", _C.VALIDATION, "a JSON path is invalid"),
            ("ERR_JSON_SCHEMA_MISMATCH", _C.VALIDATION, "the JSON does not match its schema"),
            ("ERR_JSON_TRANSFORM_FAILED", _C.PERMANENT, "a JSON transform failed"),
            ("ERR_JSON_DEPTH_EXCEEDED", _C.VALIDATION, "the JSON nests deeper than allowed"),
            ("ERR_JSON_SIZE_EXCEEDED", _C.VALIDATION, "the JSON is larger than allowed"),
            ("ERR_VALIDATION_FAILED", _C.VALIDATION, "the input does not match its schema"),
            (
                "ERR_PERMISSION_DENIED",
                _C.PERMANENT,
                "the operating system refused access (PermissionError: EACCES, EPERM)",
            ),
            (
                "ERR_MISSING_IDEMPOTENCY_KEY",
                _C.VALIDATION,
                "a non-idempotent operation was started without an idempotency key",
            ),
        )
    ),
]

_ALL_CODES: list[CodeInfo] = [
    *_codes(
        _K.NETWORK,
        ("ERR_CONNECTION_REFUSED", "nothing listens at the address (ECONNREFUSED)"),
        ("ERR_CONNECTION_RESET", "the peer reset the connection (ECONNRESET, broken pipe)"),
        ("ERR_CONNECTION_CLOSED", "the server closed the connection before a full response"),
        ("ERR_DNS_FAILURE", "the host name did not resolve"),
        ("ERR_SSL_CERTIFICATE", "the server certificate did not verify"),
        ("ERR_NETWORK_UNREACHABLE", "no route to the host or network"),
        ("ERR_PROXY_ERROR", "the proxy refused or failed the connection"),
        ("ERR_REQUEST_CORRUPTED", "the provider could not parse a request body we sent intact"),
        ("ERR_NETWORK", "another transport failure"),
        ("ERR_SOCKET_ERROR", "a socket operation failed (OSError from the socket layer)"),
    ),
    *_codes(
        _K.TIMEOUT,
        ("ERR_TIMEOUT", "the operation timed out"),
        ("ERR_CONNECT_TIMEOUT", "connecting timed out (the request was surely not sent)"),
        ("ERR_READ_TIMEOUT", "no response arrived in time (the server may have acted)"),
        ("ERR_WRITE_TIMEOUT", "sending the request timed out"),
        ("ERR_POOL_TIMEOUT", "no connection from the pool became free in time"),
        ("ERR_HTTP_408_REQUEST_TIMEOUT", "HTTP 408: the server timed out waiting for us"),
        ("ERR_HTTP_504_GATEWAY_TIMEOUT", "HTTP 504 or a provider timeout_error"),
        ("ERR_STREAM_STALLED", "a stream started, then stopped sending"),
    ),
    *_codes(
        _K.RATE_LIMIT,
        ("ERR_HTTP_429_RATE_LIMITED", "HTTP 429: a per-minute request or token limit"),
        ("ERR_LLM_RATE_LIMITED", "a rate limit reported outside an HTTP 429 (stream, agent)"),
        ("ERR_LLM_RAMP_LIMIT", "traffic ramped up too fast; retry at a lower rate"),
    ),
    *_codes(
        _K.SERVER_ERROR,
        ("ERR_HTTP_500_INTERNAL", "HTTP 500 internal server error"),
        ("ERR_HTTP_502_BAD_GATEWAY", "HTTP 502 bad gateway"),
        ("ERR_HTTP_529_OVERLOADED", "HTTP 529: the provider is overloaded"),
        ("ERR_HTTP_5XX", "another HTTP 5xx status"),
        ("ERR_LLM_OVERLOADED", "the provider reported overload outside a 529 (stream, agent)"),
        ("ERR_LLM_STREAM_ERROR", "a transient server error inside a 200 stream"),
        (
            "ERR_PROVIDER_RETRY_REQUESTED",
            "the provider asked for a retry (x-should-retry: true) of an error it would "
            "otherwise not be retried",
        ),
    ),
    *_codes(
        _K.CONTEXT_LIMIT,
        ("ERR_LLM_CONTEXT_LENGTH", "the prompt does not fit the model's context window"),
    ),
    *_codes(
        _K.CONTENT_POLICY,
        ("ERR_LLM_CONTENT_FILTER", "input or output was blocked by a content filter"),
        ("ERR_LLM_REFUSAL", "the model refused (stop_reason refusal)"),
    ),
    *_codes(
        _K.QUOTA_EXHAUSTED,
        ("ERR_LLM_QUOTA_EXHAUSTED", "the account's quota is used up"),
        ("ERR_LLM_CREDIT_BALANCE", "the prepaid credit balance is too low"),
        ("ERR_LLM_SPEND_LIMIT", "an organisation, project or workspace spend limit was reached"),
        ("ERR_LLM_DAILY_QUOTA", "a per-day quota is used up until its reset"),
        ("ERR_LLM_USAGE_LIMIT", "a subscription usage window (5-hour, weekly) is used up"),
        ("ERR_LLM_QUOTA_ZERO", "the quota for this model or tier is zero (not enabled)"),
        ("ERR_HTTP_402_PAYMENT_REQUIRED", "HTTP 402: billing must be fixed first"),
    ),
    *_codes(
        _K.AUTH,
        ("ERR_HTTP_401_UNAUTHORIZED", "HTTP 401: the credentials were not accepted"),
        ("ERR_HTTP_403_FORBIDDEN", "HTTP 403: the credentials lack permission"),
        ("ERR_AUTH_INVALID_KEY", "the API key is invalid"),
        ("ERR_AUTH_MISSING_CREDENTIALS", "no credentials were given"),
        ("ERR_AUTH_REGION_UNSUPPORTED", "the account or region may not use this service"),
        ("ERR_AUTH_ACCOUNT_DISABLED", "the organisation or account is disabled or suspended"),
    ),
    *_codes(
        _K.INVALID_REQUEST,
        ("ERR_HTTP_400_BAD_REQUEST", "HTTP 400: the request is malformed or invalid"),
        ("ERR_HTTP_404_NOT_FOUND", "HTTP 404: no such endpoint or resource"),
        ("ERR_HTTP_409_CONFLICT", "HTTP 409: resolve the conflict before retrying"),
        ("ERR_HTTP_413_REQUEST_TOO_LARGE", "HTTP 413: the request exceeds a byte limit"),
        ("ERR_HTTP_4XX", "another HTTP 4xx status"),
        ("ERR_LLM_MODEL_NOT_FOUND", "the model does not exist or is not available"),
        ("ERR_LLM_REQUEST_TOO_LARGE", "one request exceeds a whole per-minute budget"),
        ("ERR_INVALID_URL", "the URL or scheme is invalid"),
        ("ERR_REQUEST_INVALID", "the request could not be built or sent as given"),
        ("ERR_AGENT_CONFIG", "the agent CLI rejected its configuration before any request"),
    ),
    *_codes(
        _K.OUTPUT_INVALID,
        ("ERR_OUTPUT_INVALID", "the output did not validate"),
        ("ERR_OUTPUT_TRUNCATED", "the output stopped at the token limit before completing"),
    ),
    *_codes(
        _K.LIMIT_EXCEEDED,
        ("ERR_LIMIT_EXCEEDED", "one of our own execution limits was reached"),
        ("ERR_LIMIT_MAX_TURNS", "the agent reached its maximum number of turns"),
        ("ERR_LIMIT_BUDGET", "the run reached its cost budget"),
        (
            "ERR_BUDGET_EXCEEDED",
            "a spending budget (USD or tokens) of the task, batch or tenant has no room for "
            "the next attempt: backstay did not start it",
        ),
        ("ERR_LIMIT_MAX_STEPS", "the agent run reached its maximum number of steps"),
        ("ERR_LIMIT_TOKENS", "the agent run reached its token limit"),
        ("ERR_LIMIT_WALL_TIME", "the agent run reached its wall-time limit"),
        ("ERR_LIMIT_TOOL_CALLS", "the agent run reached its maximum number of tool calls"),
        ("ERR_LIMIT_RETRIES", "the agent run reached its maximum number of retries"),
        ("ERR_LIMIT_LOOP", "the agent repeated the same call with the same arguments"),
        ("ERR_RESOURCE_EXHAUSTED", "a resource (budget, quota, capacity) of our own is used up"),
    ),
    *_codes(
        _K.SECURITY_VIOLATION,
        ("ERR_SECURITY_VIOLATION", "the agent tried something its sandbox forbids"),
        ("ERR_TOOL_NOT_ALLOWED", "the agent asked for a tool that is not on its allowlist"),
        ("ERR_SANDBOX_ESCAPE", "a tool was asked to reach outside its workspace or sandbox"),
        ("ERR_APPROVAL_REQUIRED", "the action waits for a human decision before it runs"),
    ),
    *_codes(
        _K.CANCELLED,
        ("ERR_CANCELLED", "the operation was cancelled"),
        ("ERR_HTTP_499_CLIENT_CLOSED", "HTTP 499: the client closed the request"),
    ),
    *_codes(
        _K.UNKNOWN,
        ("ERR_UNKNOWN", "nothing recognisable"),
        ("ERR_RESPONSE_MALFORMED", "the response could not be read as the provider's format"),
        ("ERR_AGENT_FAILED", "the agent CLI failed without a recognisable reason"),
    ),
    *_ERROR_CONTRACT_CODES,
    # Where the provider says explicitly not to retry, it wins over the kind's default; the
    # error contract's category of a failure that will not succeed on retry is PERMANENT.
    _override(
        "ERR_RATE_LIMIT_NO_RETRY",
        _K.RATE_LIMIT,
        False,
        "a rate limit the provider marked not retryable (x-should-retry: false)",
        _C.PERMANENT,
    ),
    _override(
        "ERR_SERVER_ERROR_NO_RETRY",
        _K.SERVER_ERROR,
        False,
        "a server error the provider marked not retryable (x-should-retry: false)",
        _C.PERMANENT,
    ),
    _override(
        "ERR_TIMEOUT_NO_RETRY",
        _K.TIMEOUT,
        False,
        "a timeout the provider marked not retryable (x-should-retry: false)",
        _C.PERMANENT,
    ),
    _override(
        "ERR_UNKNOWN_NO_RETRY",
        _K.UNKNOWN,
        False,
        "an unrecognised error the provider marked not retryable (x-should-retry: false)",
        _C.PERMANENT,
    ),
]

CODES: Final[Mapping[str, CodeInfo]] = {info.code: info for info in _ALL_CODES}


# Names the error contract uses for codes backstay names otherwise. backstay's name is
# canonical: a ``Failure`` built with an alias carries the canonical code.
CODE_ALIASES: Final[Mapping[str, str]] = {
    "ERR_HTTP_408_TIMEOUT": "ERR_HTTP_408_REQUEST_TIMEOUT",
    "ERR_HTTP_500_SERVER_ERROR": "ERR_HTTP_500_INTERNAL",
    "ERR_LLM_INVALID_MODEL": "ERR_LLM_MODEL_NOT_FOUND",
    "ERR_LLM_AUTH_FAILURE": "ERR_AUTH_INVALID_KEY",
    "ERR_LLM_API_ERROR": "ERR_UNKNOWN",
}


# The error contract's spelling of codes backstay names more finely or otherwise: what a
# ``StructuredOutcome`` or ``ErrorInfo`` built from a ``Failure`` shows (the Failure's own
# code kept in ``details["backstay_code"]``, so nothing is lost).
CONTRACT_SPELLING: Final[Mapping[str, str]] = {
    "ERR_HTTP_408_REQUEST_TIMEOUT": "ERR_HTTP_408_TIMEOUT",
    "ERR_HTTP_500_INTERNAL": "ERR_HTTP_500_SERVER_ERROR",
    "ERR_LLM_MODEL_NOT_FOUND": "ERR_LLM_INVALID_MODEL",
    "ERR_CONNECT_TIMEOUT": "ERR_TIMEOUT",
    "ERR_READ_TIMEOUT": "ERR_TIMEOUT",
    "ERR_WRITE_TIMEOUT": "ERR_TIMEOUT",
    "ERR_POOL_TIMEOUT": "ERR_TIMEOUT",
}
# The contract's own fallback for a status its table leaves out (``_map_http_error``).
HTTP_STATUS_CODE: Final = re.compile(r"^ERR_HTTP_([1-5][0-9][0-9])$")


def canonical_code(code: str) -> str:
    """``code`` itself, or the canonical code an alias stands for (unknown codes unchanged)."""
    return CODE_ALIASES.get(code, code)


def code_info(code: str) -> CodeInfo:
    """The registered description of ``code`` (or of the code an alias stands for); raises
    ``KeyError`` for an unknown code."""
    return CODES[canonical_code(code)]
