"""The error contract (skill error handling), checked against its own tables and examples.

The contract's text: ``backend/app/specs/error_contract.md`` (version 1.0.0) in the public
repository ``Xuniverzadmin/agenticverz_2.0``; its tables, its ``SkillDescriptor`` and
idempotency-key examples and its ``compute_retry_delay`` are reproduced here as printed.

Each table below is the contract's, row for row as it prints it: code, category, retryable.
backstay's own name stays canonical; where the contract names a code differently
(``ERR_HTTP_408_TIMEOUT``…) the contract's name is an alias (``CODE_ALIASES``).
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from pathlib import Path
from typing import Any

import pytest

from backstay import (
    CODE_ALIASES,
    CODES,
    ErrorCategory,
    ErrorInfo,
    Failure,
    StructuredOutcome,
    classify,
    code_info,
)
from backstay.errors import ConfigError
from backstay.idempotency import IdempotencyGuard, MissingIdempotencyKey, SkillDescriptor
from backstay.idempotency.memory import MemoryOperationStore
from backstay.policy import ERROR_CONTRACT, JitterMode, RetryPolicy
from backstay.policy.retry import GiveUpReason, KindOverride, attempt_limit, decide
from backstay.taxonomy import FailureKind
from backstay.testing import FakeClock

# "Category → Retryability Rules", as the contract writes it.
RETRYABLE_CATEGORIES = {
    "TRANSIENT": True,
    "RATE_LIMIT": True,
    "CLIENT_ERROR": False,
    "SERVER_ERROR": True,
    "AUTH_FAIL": False,
    "NETWORK": True,
    "VALIDATION": False,
    "RESOURCE": False,  # Conditional - depends on context
    "TIMEOUT": True,
    "PERMANENT": False,
}

HTTP_TABLE = [
    ("ERR_HTTP_400_BAD_REQUEST", "CLIENT_ERROR", False),
    ("ERR_HTTP_401_UNAUTHORIZED", "AUTH_FAIL", False),
    ("ERR_HTTP_403_FORBIDDEN", "AUTH_FAIL", False),
    ("ERR_HTTP_404_NOT_FOUND", "CLIENT_ERROR", False),
    ("ERR_HTTP_408_TIMEOUT", "TIMEOUT", True),
    ("ERR_HTTP_409_CONFLICT", "CLIENT_ERROR", False),
    ("ERR_HTTP_422_UNPROCESSABLE", "VALIDATION", False),
    ("ERR_HTTP_429_RATE_LIMITED", "RATE_LIMIT", True),
    ("ERR_HTTP_500_SERVER_ERROR", "SERVER_ERROR", True),
    ("ERR_HTTP_502_BAD_GATEWAY", "SERVER_ERROR", True),
    ("ERR_HTTP_503_UNAVAILABLE", "TRANSIENT", True),
    ("ERR_HTTP_504_GATEWAY_TIMEOUT", "TIMEOUT", True),
]
NETWORK_TABLE = [
    ("ERR_CONNECTION_REFUSED", "NETWORK", True),
    ("ERR_TIMEOUT", "TIMEOUT", True),
    ("ERR_DNS_FAILURE", "NETWORK", True),
    ("ERR_SSL_ERROR", "NETWORK", False),
    ("ERR_SOCKET_ERROR", "NETWORK", True),
]
LLM_TABLE = [
    ("ERR_LLM_RATE_LIMITED", "RATE_LIMIT", True),
    ("ERR_LLM_CONTEXT_LENGTH", "VALIDATION", False),
    ("ERR_LLM_INVALID_MODEL", "CLIENT_ERROR", False),
    ("ERR_LLM_CONTENT_FILTER", "PERMANENT", False),
    ("ERR_LLM_API_ERROR", "TRANSIENT", True),
    ("ERR_LLM_AUTH_FAILURE", "AUTH_FAIL", False),
]
JSON_TABLE = [
    ("ERR_JSON_INVALID", "VALIDATION", False),
    ("ERR_JSON_PATH_INVALID", "VALIDATION", False),
    ("ERR_JSON_SCHEMA_MISMATCH", "VALIDATION", False),
    ("ERR_JSON_TRANSFORM_FAILED", "PERMANENT", False),
    ("ERR_JSON_DEPTH_EXCEEDED", "VALIDATION", False),
    ("ERR_JSON_SIZE_EXCEEDED", "VALIDATION", False),
]
TERMINAL = [
    "ERR_HTTP_400_BAD_REQUEST",
    "ERR_HTTP_401_UNAUTHORIZED",
    "ERR_HTTP_403_FORBIDDEN",
    "ERR_HTTP_404_NOT_FOUND",
    "ERR_VALIDATION_FAILED",
    "ERR_JSON_INVALID",
    "ERR_LLM_CONTENT_FILTER",
    "ERR_BUDGET_EXCEEDED",
]
RETRYABLE = [
    "ERR_HTTP_429_RATE_LIMITED",
    "ERR_HTTP_503_UNAVAILABLE",
    "ERR_TIMEOUT",
    "ERR_CONNECTION_REFUSED",
    "ERR_LLM_RATE_LIMITED",
    "ERR_DNS_FAILURE",
]
CONDITIONAL = ["ERR_RESOURCE_EXHAUSTED", "ERR_HTTP_500_SERVER_ERROR", "ERR_LLM_API_ERROR"]
# The one row of the contract that contradicts its own category rules.
CONTRACT_EXCEPTIONS = {"ERR_SSL_ERROR"}


@pytest.mark.parametrize(
    ("code", "category", "retryable"), HTTP_TABLE + NETWORK_TABLE + LLM_TABLE + JSON_TABLE
)
def test_each_row_of_the_code_tables_holds(code: str, category: str, retryable: bool) -> None:
    info = code_info(code)
    assert (str(info.category), info.retryable) == (category, retryable)
    failure = Failure(code=code).to_error_info()
    assert (failure["category"], failure["retryable"]) == (category, retryable)


@pytest.mark.parametrize("code", TERMINAL)
def test_terminal_errors_are_not_retryable(code: str) -> None:
    assert code_info(code).retryable is False


@pytest.mark.parametrize("code", RETRYABLE)
def test_retryable_errors_are_retryable(code: str) -> None:
    assert code_info(code).retryable is True


@pytest.mark.parametrize("code", CONDITIONAL)
def test_conditional_codes_exist(code: str) -> None:
    assert code_info(code).code in CODES


def test_every_code_the_contract_names_is_accepted() -> None:
    named = [c for c, _, _ in HTTP_TABLE + NETWORK_TABLE + LLM_TABLE + JSON_TABLE]
    named += TERMINAL + RETRYABLE + CONDITIONAL + ["ERR_MISSING_IDEMPOTENCY_KEY"]
    assert [c for c in named if c not in CODES and c not in CODE_ALIASES] == []


def test_an_alias_becomes_backstays_canonical_code() -> None:
    assert Failure(code="ERR_HTTP_408_TIMEOUT").code == "ERR_HTTP_408_REQUEST_TIMEOUT"
    assert Failure(code="ERR_HTTP_500_SERVER_ERROR").code == "ERR_HTTP_500_INTERNAL"


# CI enforcement, check 3 and check 4: "Error categories are valid", "Retryability matches
# category rules" — for every code backstay has, not only those the tables name.
@pytest.mark.parametrize("code", sorted(CODES))
def test_ci_check_3_every_category_is_valid(code: str) -> None:
    assert str(CODES[code].category) in RETRYABLE_CATEGORIES


@pytest.mark.parametrize("code", sorted(set(CODES) - CONTRACT_EXCEPTIONS))
def test_ci_check_4_retryability_matches_the_category_rules(code: str) -> None:
    info = CODES[code]
    assert info.retryable is RETRYABLE_CATEGORIES[str(info.category)]


def test_ci_check_4_the_one_exception_is_the_contracts_own_ssl_row() -> None:
    info = CODES["ERR_SSL_ERROR"]
    assert (str(info.category), info.retryable) == ("NETWORK", False)
    assert RETRYABLE_CATEGORIES["NETWORK"] is True


def test_the_contracts_category_set_is_backstays() -> None:
    assert {str(c) for c in ErrorCategory} == set(RETRYABLE_CATEGORIES)


# "Deterministic Retry Behavior": the contract's own function, verbatim in substance.
def compute_retry_delay(attempt: int, config: dict[str, Any], seed: int | None = None) -> int:
    base_delay = min(
        config["initial_delay_ms"] * (config["backoff_multiplier"] ** attempt),
        config["max_delay_ms"],
    )
    if config["jitter_enabled"]:
        if seed is not None:
            jitter_hash = hashlib.sha256(f"{seed}:{attempt}".encode()).digest()
            jitter_value = int.from_bytes(jitter_hash[:4], "big") / (2**32)
        else:
            jitter_value = random.random()  # the contract's unseeded branch
        jitter_range = base_delay * config["jitter_range"]
        base_delay += jitter_range * (2 * jitter_value - 1)
    return int(base_delay)


DEFAULT_RETRY_CONFIG = {
    "max_retries": 3,
    "initial_delay_ms": 100,
    "max_delay_ms": 5000,
    "backoff_multiplier": 2.0,
    "jitter_enabled": True,
    "jitter_range": 0.1,  # ±10% jitter
}


def _backstay_delays_ms(policy: RetryPolicy, failure: Failure, retries: int) -> list[int]:
    delays = []
    for attempt in range(1, retries + 1):
        decision = decide(
            policy, failure, attempt=attempt, elapsed_s=0.0, previous_delay_s=None, draw=0.5
        )
        assert decision.retry
        delays.append(round(decision.delay_s * 1000))
    return delays


@pytest.mark.parametrize("seed", [0, 1, 42, 12345, 2**31 - 1])
def test_seeded_jitter_replays_the_contracts_delays_to_the_millisecond(seed: int) -> None:
    policy = RetryPolicy(
        name="replay",
        max_attempts=40,
        initial_delay_s=0.1,
        max_delay_s=5.0,
        multiplier=2.0,
        jitter=0.1,
        jitter_mode=JitterMode.SHA256,
        seed=seed,
    )
    expected = [compute_retry_delay(a, DEFAULT_RETRY_CONFIG, seed) for a in range(12)]
    assert _backstay_delays_ms(policy, Failure(code="ERR_HTTP_502_BAD_GATEWAY"), 12) == expected


def test_seeded_jitter_numbers_for_seed_42() -> None:
    # The first three delays of the contract's default configuration with seed 42.
    assert [compute_retry_delay(a, DEFAULT_RETRY_CONFIG, 42) for a in range(3)] == [
        _backstay_delays_ms(
            ERROR_CONTRACT.derive(jitter_mode="sha256", seed=42, per_kind={}, per_category={}),
            Failure(code="ERR_HTTP_502_BAD_GATEWAY"),
            3,
        )[a]
        for a in range(3)
    ]


# "Category-Specific Retry Limits": max retries, initial delay, max delay, backoff.
@pytest.mark.parametrize(
    ("code", "retries", "initial_ms", "max_ms", "factor"),
    [
        ("ERR_LLM_API_ERROR", 3, 100, 5000, 2.0),  # TRANSIENT
        ("ERR_HTTP_429_RATE_LIMITED", 3, 1000, 30000, 2.0),
        ("ERR_HTTP_502_BAD_GATEWAY", 2, 500, 10000, 2.0),  # SERVER_ERROR
        ("ERR_TIMEOUT", 2, 200, 5000, 1.5),
        ("ERR_CONNECTION_REFUSED", 3, 100, 5000, 2.0),  # NETWORK
        ("ERR_HTTP_503_UNAVAILABLE", 3, 100, 5000, 2.0),  # TRANSIENT by the table
        ("ERR_HTTP_408_TIMEOUT", 2, 200, 5000, 1.5),  # TIMEOUT
    ],
)
def test_the_error_contract_policy_has_the_category_limits(
    code: str, retries: int, initial_ms: int, max_ms: int, factor: float
) -> None:
    failure = Failure(code=code)
    policy = ERROR_CONTRACT.derive(jitter=0.0)
    assert attempt_limit(policy, failure.kind, override=policy.override_for(failure)) == retries + 1
    delays = _backstay_delays_ms(policy, failure, retries)
    assert delays == [min(round(initial_ms * factor**n), max_ms) for n in range(retries)]
    stop = decide(
        policy, failure, attempt=retries + 1, elapsed_s=0.0, previous_delay_s=None, draw=0.5
    )
    assert stop.retry is False


def test_the_example_error_response_is_accepted_as_written() -> None:
    outcome = StructuredOutcome.failure(
        code="ERR_HTTP_429_RATE_LIMITED",
        message="Rate limit exceeded for api.example.com",
        category="RATE_LIMIT",
        retryable=True,
        details={
            "upstream_status": 429,
            "rate_limit_remaining": 0,
            "rate_limit_reset": "2025-12-01T12:00:00Z",
            "provider": "example_api",
        },
        retry_after_ms=60000,
    )
    # The contract's test pattern.
    assert outcome.ok is False
    assert outcome.error is not None
    assert "code" in outcome.error
    assert "category" in outcome.error
    assert "retryable" in outcome.error
    assert outcome.error["code"] in CODES
    assert outcome.error["category"] in RETRYABLE_CATEGORIES
    assert outcome.error["retry_after_ms"] == 60000
    assert outcome.failure_value is not None
    assert outcome.failure_value.retry_after_s == 60.0


def test_the_llm_invoke_examples_are_accepted_as_written() -> None:
    context = StructuredOutcome.failure(
        code="ERR_LLM_CONTEXT_LENGTH",
        message="Input exceeds model context length",
        category="VALIDATION",
        retryable=False,
        details={"provider": "anthropic", "model": "claude"},
    )
    api_error = StructuredOutcome.failure(
        code="ERR_LLM_API_ERROR", message="bad", category="CLIENT_ERROR", retryable=False
    )
    assert context.error is not None
    assert context.error["category"] == "VALIDATION"
    assert api_error.error is not None
    assert api_error.error["code"] == "ERR_LLM_API_ERROR"


def test_the_keyword_form_refuses_an_unknown_code() -> None:
    with pytest.raises(ConfigError, match="code: unknown code 'ERR_NOT_A_CODE'"):
        StructuredOutcome.failure(
            code="ERR_NOT_A_CODE", message="x", category="TRANSIENT", retryable=True
        )


def test_the_keyword_form_refuses_an_unknown_category() -> None:
    with pytest.raises(ConfigError, match="category: must be one of TRANSIENT"):
        StructuredOutcome.failure(
            code="ERR_TIMEOUT", message="x", category="SOMETIMES", retryable=True
        )


def test_the_keyword_form_takes_category_and_retryable_from_the_code() -> None:
    outcome = StructuredOutcome.failure(code="ERR_HTTP_503_UNAVAILABLE", message="down")
    assert outcome.error is not None
    assert (outcome.error["category"], outcome.error["retryable"]) == ("TRANSIENT", True)


def test_error_info_has_the_contracts_fields_and_round_trips() -> None:
    info = ErrorInfo(
        code="ERR_HTTP_429_RATE_LIMITED",
        message="slow down",
        category=ErrorCategory.RATE_LIMIT,
        retryable=True,
        details={"k": "v"},
        retry_after_ms=1500,
        upstream_status=429,
        provider="example_api",
    )
    assert list(info.to_dict()) == [
        "code",
        "message",
        "category",
        "retryable",
        "details",
        "retry_after_ms",
        "upstream_status",
        "provider",
    ]
    assert ErrorInfo.from_failure(info.to_failure()) == info


def test_a_permission_error_is_permanent() -> None:
    failure = classify(PermissionError(13, "Permission denied"))
    assert (failure.code, failure.retryable, str(failure.category)) == (
        "ERR_PERMISSION_DENIED",
        False,
        "PERMANENT",
    )


def test_a_real_permission_error_is_not_retried(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    try:
        (locked / "f").write_text("x")
    except PermissionError as exc:
        failure = classify(exc)
    else:  # running as root: the OS grants everything, so build the error it would raise
        failure = classify(PermissionError(13, "Permission denied", str(locked / "f")))
    decision = decide(
        ERROR_CONTRACT, failure, attempt=1, elapsed_s=0.0, previous_delay_s=None, draw=0.5
    )
    assert (failure.kind, decision.retry) == (FailureKind.INVALID_REQUEST, False)


# "Non-Idempotent Operations": callers MUST provide an idempotency key.
def test_a_non_idempotent_operation_without_a_key_is_refused() -> None:
    guard = IdempotencyGuard(MemoryOperationStore(clock=FakeClock()), clock=FakeClock())
    calls: list[int] = []

    async def post() -> dict[str, object]:
        calls.append(1)
        return {"ok": True}

    with pytest.raises(MissingIdempotencyKey) as refused:
        asyncio.run(guard.run_non_idempotent(None, post))
    assert calls == []
    outcome = refused.value.outcome()
    assert outcome.error is not None
    assert outcome.error["code"] == "ERR_MISSING_IDEMPOTENCY_KEY"
    assert (outcome.error["category"], outcome.error["retryable"]) == ("VALIDATION", False)


def test_a_non_idempotent_operation_with_a_key_runs_once() -> None:
    clock = FakeClock()
    guard = IdempotencyGuard(MemoryOperationStore(clock=clock), clock=clock)
    calls: list[int] = []

    async def post() -> dict[str, object]:
        calls.append(1)
        return {"order": "widget"}

    key = "order-123-attempt-1"
    first = asyncio.run(guard.run_non_idempotent(key, post))
    again = asyncio.run(guard.run_non_idempotent(key, post))
    assert (first, again, calls) == ({"order": "widget"}, {"order": "widget"}, [1])


def test_the_missing_key_example_outcome_is_accepted_as_written() -> None:
    outcome = StructuredOutcome.failure(
        code="ERR_MISSING_IDEMPOTENCY_KEY",
        message="Non-idempotent operation requires idempotency_key",
        category="VALIDATION",
        retryable=False,
    )
    assert outcome.failure_value is not None
    assert outcome.failure_value.retryable is False


def test_a_503_gets_transients_limits_not_its_kinds() -> None:
    """The limits follow the code's category: 503 is TRANSIENT by the contract's table
    (3 retries from 100 ms), though its failure kind is ``server_error``."""
    failure = Failure(code="ERR_HTTP_503_UNAVAILABLE")
    assert (failure.category, failure.kind) == (ErrorCategory.TRANSIENT, FailureKind.SERVER_ERROR)
    policy = ERROR_CONTRACT.derive(jitter=0.0)
    assert _backstay_delays_ms(policy, failure, 3) == [100, 200, 400]
    stop = decide(policy, failure, attempt=4, elapsed_s=0.0, previous_delay_s=None, draw=0.5)
    assert (stop.retry, stop.reason) == (False, GiveUpReason.ATTEMPTS_EXHAUSTED)


def test_a_category_without_limits_falls_back_to_its_kinds() -> None:
    policy = RetryPolicy(
        name="p",
        max_attempts=5,
        per_kind={FailureKind.SERVER_ERROR: KindOverride(max_attempts=2)},
        per_category={ErrorCategory.TIMEOUT: KindOverride(max_attempts=3)},
    )
    failure = Failure(code="ERR_HTTP_502_BAD_GATEWAY")  # SERVER_ERROR: no category entry
    assert policy.override_for(failure) == KindOverride(max_attempts=2)


def test_per_category_round_trips_through_plain_data() -> None:
    assert RetryPolicy.from_dict(ERROR_CONTRACT.to_dict()) == ERROR_CONTRACT


def test_an_unknown_category_is_refused_naming_it() -> None:
    with pytest.raises(ConfigError, match=r"per_category\.SOMETIMES"):
        RetryPolicy(name="p", per_category={"SOMETIMES": {"max_attempts": 2}})  # type: ignore[dict-item]


def test_the_skill_descriptor_example_is_accepted_as_written() -> None:
    descriptor = SkillDescriptor(
        skill_id="skill.http_call",
        idempotent=True,  # GET, HEAD, OPTIONS, PUT (if replacing)
    )
    assert (descriptor.skill_id, descriptor.idempotent) == ("skill.http_call", True)


def test_a_declared_non_idempotent_skill_needs_the_callers_idempotency_key() -> None:
    # The contract's caller example: a POST carries its idempotency_key.
    params = {
        "url": "https://api.example.com/orders",
        "method": "POST",
        "body": {"item": "widget"},
        "idempotency_key": "order-123-attempt-1",  # REQUIRED
    }
    post = SkillDescriptor(skill_id="skill.http_call_post", idempotent=False)
    clock = FakeClock()
    guard = IdempotencyGuard(MemoryOperationStore(clock=clock), clock=clock)
    calls: list[str] = []

    async def execute() -> dict[str, object]:
        calls.append(str(params["method"]))
        return {"status_code": 201}

    with pytest.raises(MissingIdempotencyKey) as refused:
        asyncio.run(post.run(guard, None, execute))
    assert refused.value.failure.code == "ERR_MISSING_IDEMPOTENCY_KEY"
    key = str(params["idempotency_key"])
    first = asyncio.run(post.run(guard, key, execute))
    again = asyncio.run(post.run(guard, key, execute))
    assert (first, again, calls) == ({"status_code": 201}, {"status_code": 201}, ["POST"])


# -- the examples issue 26 found not working as printed ----------------------------------


def test_each_category_has_its_printed_one_letter_code() -> None:
    # "### Category Definitions": | Category | Code | …: T R C S A N V X O P
    printed = {
        "TRANSIENT": "T",
        "RATE_LIMIT": "R",
        "CLIENT_ERROR": "C",
        "SERVER_ERROR": "S",
        "AUTH_FAIL": "A",
        "NETWORK": "N",
        "VALIDATION": "V",
        "RESOURCE": "X",
        "TIMEOUT": "O",
        "PERMANENT": "P",
    }
    assert {c.value: c.letter for c in ErrorCategory} == printed
    assert {ErrorCategory.from_letter(letter).value for letter in printed.values()} == set(printed)
    by_letter = StructuredOutcome.failure(code="ERR_TIMEOUT", category="O", retryable=True)
    assert by_letter.error is not None
    assert by_letter.error["category"] == "TIMEOUT"


def test_socket_errors_are_network_err_socket_error() -> None:
    # "### Network Error → Error Category": | `SocketError` | `ERR_SOCKET_ERROR` | NETWORK | YES
    import socket  # noqa: PLC0415

    closed = socket.socket()
    closed.close()
    with pytest.raises(OSError, match="Bad file descriptor") as bad_fd:  # EBADF
        closed.send(b"x")
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    again = socket.socket()
    try:
        with pytest.raises(OSError, match="Address already in use") as in_use:
            again.bind(taken.getsockname())
    finally:
        taken.close()
        again.close()
    for caught in (bad_fd.value, in_use.value):
        failure = classify(caught)
        assert (failure.code, failure.category, failure.retryable) == (
            "ERR_SOCKET_ERROR",
            ErrorCategory.NETWORK,
            True,
        )


def test_the_network_table_with_real_exceptions() -> None:
    # "### Network Error → Error Category": ConnectionError (a refused connection) →
    # ERR_CONNECTION_REFUSED, TimeoutError → ERR_TIMEOUT, DNSError → ERR_DNS_FAILURE,
    # SSLError → ERR_SSL_ERROR (NETWORK, not retryable)
    import socket  # noqa: PLC0415
    import ssl  # noqa: PLC0415

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    listener.close()  # nothing listens there now
    with pytest.raises(ConnectionRefusedError) as refused:
        socket.create_connection(("127.0.0.1", port), timeout=5)
    rows = [
        (refused.value, "ERR_CONNECTION_REFUSED", True),
        (TimeoutError("timed out"), "ERR_TIMEOUT", True),
        (socket.gaierror(socket.EAI_NONAME, "Name or service not known"), "ERR_DNS_FAILURE", True),
        (
            ssl.SSLError(1, "[SSL: WRONG_VERSION_NUMBER] wrong version number"),
            "ERR_SSL_ERROR",
            False,
        ),
    ]
    for exc, code, retryable in rows:
        failure = classify(exc)
        assert (failure.code, failure.retryable) == (code, retryable), exc
        assert failure.to_error_info()["category"] in ("NETWORK", "TIMEOUT")


def test_an_unknown_model_is_err_llm_invalid_model() -> None:
    # "### LLM Provider Error → Error Category": | Invalid model | `ERR_LLM_INVALID_MODEL` |
    # CLIENT_ERROR | NO — the providers' own 404 answers, as the contract's outcome shows them
    from backstay.classify import classify_response  # noqa: PLC0415

    answers = [
        (
            "anthropic",
            {
                "type": "error",
                "error": {"type": "not_found_error", "message": "model: claude-nope"},
            },
        ),
        (
            "openai",
            {
                "error": {
                    "message": "The model `gpt-nope` does not exist",
                    "type": "invalid_request_error",
                    "code": "model_not_found",
                }
            },
        ),
    ]
    for provider, body in answers:
        outcome = StructuredOutcome.failure(classify_response(404, {}, body, provider=provider))
        assert outcome.error is not None
        assert (outcome.error["code"], outcome.error["category"], outcome.error["retryable"]) == (
            "ERR_LLM_INVALID_MODEL",
            "CLIENT_ERROR",
            False,
        )
        assert outcome.failure_value is not None
        assert outcome.failure_value.code == "ERR_LLM_MODEL_NOT_FOUND"  # backstay's name, kept


@pytest.mark.parametrize(
    ("status", "category", "retryable"), [(418, "CLIENT_ERROR", False), (507, "SERVER_ERROR", True)]
)
def test_the_map_http_error_fallback_codes_are_accepted(
    status: int, category: str, retryable: bool
) -> None:
    # "def _map_http_error(response)": ERROR_MAP.get(status, (f"ERR_HTTP_{status}",
    # "SERVER_ERROR" if status >= 500 else "CLIENT_ERROR", status >= 500))
    code = f"ERR_HTTP_{status}"
    outcome = StructuredOutcome.failure(
        code=code,
        message=f"HTTP {status}: odd",
        category="SERVER_ERROR" if status >= 500 else "CLIENT_ERROR",
        retryable=status >= 500,
        details={"upstream_status": status, "upstream_body": "", "url": "http://127.0.0.1/"},
        retry_after_ms=None,
    )
    assert outcome.error is not None
    assert (outcome.error["code"], outcome.error["category"]) == (code, category)
    failure = outcome.failure_value
    assert failure is not None
    assert (failure.status, failure.retryable) == (status, retryable)
    assert StructuredOutcome.failure(failure).error["code"] == code  # round trip


def test_the_http_call_example_timeout_is_err_timeout() -> None:
    # "### http_call Error Handling": except httpx.TimeoutException: code="ERR_TIMEOUT",
    # category="TIMEOUT"; except httpx.ConnectError: code="ERR_CONNECTION_REFUSED"
    import socket  # noqa: PLC0415

    import httpx  # noqa: PLC0415

    silent = socket.socket()  # accepts and never answers
    silent.bind(("127.0.0.1", 0))
    silent.listen(1)
    url = f"http://127.0.0.1:{silent.getsockname()[1]}/"
    try:
        with pytest.raises(httpx.TimeoutException) as timed_out:
            httpx.get(url, timeout=0.2)
    finally:
        silent.close()
    with pytest.raises(httpx.ConnectError) as refused:
        httpx.get(url, timeout=2)
    timeout = StructuredOutcome.failure(classify(timed_out.value))
    assert timeout.error is not None
    assert (timeout.error["code"], timeout.error["category"], timeout.error["retryable"]) == (
        "ERR_TIMEOUT",
        "TIMEOUT",
        True,
    )
    assert timeout.error["details"]["backstay_code"] == "ERR_READ_TIMEOUT"  # the finer name
    connect = StructuredOutcome.failure(classify(refused.value))
    assert connect.error is not None
    assert (connect.error["code"], connect.error["category"]) == (
        "ERR_CONNECTION_REFUSED",
        "NETWORK",
    )


def test_the_llm_invoke_example_keeps_its_category_the_table_decides_the_failure() -> None:
    # "### llm_invoke Error Handling" returns ERR_LLM_API_ERROR as CLIENT_ERROR, not
    # retryable; the LLM table prints ERR_LLM_API_ERROR as TRANSIENT, retryable. The
    # outcome keeps what the skill wrote; backstay's Failure of it follows the table
    # ("Same error code → Same category", the Determinism Contract): docs/conformance.md.
    outcome = StructuredOutcome.failure(
        code="ERR_LLM_API_ERROR", message="bad", category="CLIENT_ERROR", retryable=False
    )
    assert outcome.error is not None
    assert (outcome.error["category"], outcome.error["retryable"]) == ("CLIENT_ERROR", False)
    assert outcome.failure_value is not None
    assert outcome.failure_value.retryable is True
    assert code_info("ERR_LLM_API_ERROR").category is ErrorCategory.TRANSIENT
