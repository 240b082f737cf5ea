"""The classifiers never raise, whatever they are handed.

``classify_response``, ``classify_output`` and ``classify`` sit on error paths: a crash
there replaces the failure being handled with a new one. Every result they return is a
registered code whose kind and retryability are the taxonomy's.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backstay import AGENT_NAMES, CODES, Failure, classify, classify_output, classify_response

_SETTINGS = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
_NOW = dt.datetime(2025, 6, 1, 12, 0, tzinfo=dt.UTC)


def _assert_consistent(failure: object) -> None:
    assert isinstance(failure, Failure)
    info = CODES[failure.code]
    assert failure.kind is info.kind
    assert failure.retryable is info.retryable


def _assert_no_internal_error(failure: Failure) -> None:
    """The classifier read the input itself, rather than falling back after a crash."""
    assert failure.details.get("source") != "classifier_error", failure.details


# --------------------------------------------------------------------------- JSON material

# Field names the provider and agent readers look for, so generated objects reach them.
_FIELD_NAMES = st.sampled_from(
    [
        "error",
        "message",
        "type",
        "code",
        "status",
        "details",
        "reason",
        "metadata",
        "raw",
        "innererror",
        "inner_error",
        "response",
        "data",
        "statusCode",
        "retryDelay",
        "violations",
        "quotaId",
        "quotaValue",
        "quota_limit_value",
        "error_code",
        "subtype",
        "is_error",
        "result",
        "errors",
        "terminal_reason",
        "api_error_status",
        "error_status",
        "stop_reason",
        "finish_reason",
        "finishReason",
        "candidates",
        "choices",
        "promptFeedback",
        "blockReason",
        "refusal",
        "incomplete_details",
        "responseBody",
        "responseHeaders",
        "seconds",
        "nanos",
    ]
) | st.text(max_size=12)

_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=40)
    | st.sampled_from(
        [
            "error",
            "rate_limit_error",
            "overloaded_error",
            "invalid_request_error",
            "insufficient_quota",
            "RESOURCE_EXHAUSTED",
            "INVALID_ARGUMENT",
            "API_KEY_INVALID",
            "type.googleapis.com/google.rpc.ErrorInfo",
            "type.googleapis.com/google.rpc.QuotaFailure",
            "type.googleapis.com/google.rpc.RetryInfo",
            "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
            "26s",
            "limit: 0",
            "result",
            "system",
            "api_retry",
            "error_max_turns",
            "turn.failed",
            "SAFETY",
            "refusal",
            "429",
            "Rate limit reached. Please try again in 1.5s.",
            "usage limit reached|1735689600",
        ]
    )
)

_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_FIELD_NAMES, inner, max_size=5),
    max_leaves=10,
)

_GOOGLE_DETAIL = st.fixed_dictionaries(
    {
        "@type": st.sampled_from(
            [
                "type.googleapis.com/google.rpc.ErrorInfo",
                "type.googleapis.com/google.rpc.QuotaFailure",
                "type.googleapis.com/google.rpc.RetryInfo",
            ]
        )
        | _JSON
    },
    optional={
        "reason": _JSON,
        "metadata": _JSON,
        "violations": _JSON | st.lists(st.dictionaries(_FIELD_NAMES, _JSON, max_size=4)),
        "retryDelay": _JSON,
    },
)

# An ``error`` object with every field present or not, each of any JSON type.
_ERROR_OBJECT = st.fixed_dictionaries(
    {},
    optional={
        "message": _JSON,
        "type": _JSON,
        "code": _JSON,
        "status": _JSON,
        "details": _JSON | st.lists(_GOOGLE_DETAIL, max_size=3),
        "innererror": _JSON,
        "inner_error": _JSON,
        "metadata": _JSON | st.fixed_dictionaries({"raw": _JSON}),
    },
)

_ERROR_BODIES = st.one_of(
    st.fixed_dictionaries({"error": _ERROR_OBJECT | _JSON}),
    st.fixed_dictionaries({"type": st.just("error"), "error": _ERROR_OBJECT | _JSON}),
    st.fixed_dictionaries({"type": st.just("error")}).flatmap(
        lambda base: _ERROR_OBJECT.map(lambda err: {**err, **base})
    ),
    st.fixed_dictionaries({"response": st.fixed_dictionaries({"error": _ERROR_OBJECT})}),
    st.fixed_dictionaries({"data": st.dictionaries(_FIELD_NAMES, _JSON) | _JSON}).map(
        lambda body: {"data": {"statusCode": body["data"], "message": body["data"]}}
    ),
    st.lists(st.fixed_dictionaries({"error": _ERROR_OBJECT}), min_size=1, max_size=2),
    st.dictionaries(_FIELD_NAMES, _JSON, max_size=6),
)


# Successful bodies whose success fields carry any JSON type.
_SUCCESS_BODIES = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(["message", "message_delta", "response"]) | _JSON,
        "delta": _JSON,
        "stop_reason": st.sampled_from(["end_turn", "refusal", "max_tokens"]) | _JSON,
        "choices": _JSON,
        "candidates": _JSON,
        "promptFeedback": _JSON,
        "response": _JSON,
        "status": st.just("incomplete") | _JSON,
        "incomplete_details": _JSON,
    },
)


def _json_text(value: Any) -> str:
    return json.dumps(value)


_BODIES = st.one_of(
    st.none(),
    st.text(),
    st.binary(),
    st.binary().map(bytearray),
    _JSON,
    _ERROR_BODIES,
    _SUCCESS_BODIES,
    _SUCCESS_BODIES.map(_json_text),
    _ERROR_BODIES.map(_json_text),
    _ERROR_BODIES.map(lambda body: _json_text(body).encode()),
    _ERROR_BODIES.map(lambda body: f"event: error\ndata: {_json_text(body)}\n\n"),
    st.tuples(st.text(max_size=30), _ERROR_BODIES).map(
        lambda pair: f"{pair[0]} Error code: 429 - {pair[1]!r}"
    ),
    st.lists(st.text(max_size=30), max_size=5).map(lambda lines: "data: " + "\ndata: ".join(lines)),
)

# --------------------------------------------------------------------------- headers

_HEADER_NAMES = st.sampled_from(
    [
        "retry-after",
        "retry-after-ms",
        "x-should-retry",
        "request-id",
        "x-request-id",
        "content-type",
        "openai-processing-ms",
        "anthropic-ratelimit-unified-status",
        "anthropic-ratelimit-unified-reset",
        "anthropic-ratelimit-unified-5h-status",
        "anthropic-ratelimit-requests-remaining",
        "anthropic-ratelimit-requests-reset",
        "anthropic-ratelimit-tokens-reset",
        "x-ratelimit-remaining-requests",
        "x-ratelimit-reset-requests",
        "x-ratelimit-reset-tokens",
        "Retry-After",
        "",
    ]
) | st.text(max_size=20)

_HEADER_VALUES = st.sampled_from(
    [
        "0",
        "-1",
        "7",
        "1.5",
        "1e309",
        "nan",
        "inf",
        "-inf",
        "true",
        "false",
        "rejected",
        "allowed",
        "6m0s",
        "1h2m3.5s",
        "20ms",
        "99999999999999999999",
        "1735689600",
        "1735689600000",
        "2025-01-01T00:00:00Z",
        "9999-12-31T23:59:59+14:00",
        "0001-01-01T00:00:00-14:00",
        "Wed, 21 Oct 2015 07:28:00 GMT",
        "Fri, 31 Dec 9999 23:59:59 GMT",
        "",
    ]
) | st.text(max_size=40)


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


_HEADERS = st.one_of(
    st.none(),
    st.dictionaries(_HEADER_NAMES, _HEADER_VALUES, max_size=8),
    st.lists(st.tuples(_HEADER_NAMES, _HEADER_VALUES), max_size=8),
    st.dictionaries(_HEADER_NAMES.map(_utf8), _HEADER_VALUES.map(_utf8), max_size=8),
    st.lists(st.tuples(st.binary(max_size=20), st.binary(max_size=40)), max_size=8),
    st.dictionaries(_HEADER_NAMES, _JSON, max_size=6),
    st.lists(st.lists(_HEADER_VALUES, max_size=3), max_size=4),
    st.text(max_size=20),
)

_STATUSES = st.one_of(
    st.none(),
    st.integers(),
    st.integers(min_value=-1000, max_value=1000),
    st.sampled_from([0, 200, 201, 204, 400, 401, 402, 403, 404, 408, 409, 413, 422, 429, 499]),
    st.sampled_from([500, 502, 503, 504, 529, 599, 600, 999, 10**30, -(10**30)]),
)

_PROVIDERS = (
    st.none()
    | st.text(max_size=12)
    | st.sampled_from(
        ["anthropic", "openai", "gemini", "google", "vertex", "azure", "bedrock", "claude", "acme"]
    )
)


# --------------------------------------------------------------------------- classify_response


@_SETTINGS
@given(status=_STATUSES, headers=_HEADERS, body=_BODIES, provider=_PROVIDERS)
def test_classify_response_never_raises_and_its_code_decides_kind_and_retryable(
    status: Any, headers: Any, body: Any, provider: Any
) -> None:
    failure = classify_response(status, headers, body, provider=provider, now=_NOW)
    _assert_consistent(failure)


@_SETTINGS
@given(status=_STATUSES, headers=_HEADERS, body=_BODIES, provider=_PROVIDERS)
def test_classify_response_reads_any_response_without_falling_back_after_a_crash(
    status: Any, headers: Any, body: Any, provider: Any
) -> None:
    failure = classify_response(status, headers, body, provider=provider, now=_NOW)
    _assert_no_internal_error(failure)


# --------------------------------------------------------------------------- classify_output

_AGENT_OBJECTS = st.fixed_dictionaries(
    {
        "type": st.sampled_from(
            ["result", "system", "error", "turn.failed", "turn.completed", "assistant", "message"]
        )
        | _JSON
    },
    optional={
        "subtype": st.sampled_from(["success", "api_retry", "error_max_turns", "error_x"]) | _JSON,
        "is_error": _JSON,
        "result": _JSON,
        "errors": _JSON,
        "error": _ERROR_OBJECT | _JSON,
        "message": _JSON,
        "terminal_reason": _JSON,
        "api_error_status": _JSON,
        "error_status": _JSON,
        "data": _JSON,
    },
)

_OUTPUTS = st.one_of(
    st.text(),
    st.binary(),
    _AGENT_OBJECTS.map(_json_text),
    st.lists(_AGENT_OBJECTS.map(_json_text) | st.text(max_size=40), max_size=6).map("\n".join),
    st.lists(_AGENT_OBJECTS.map(_json_text), max_size=6).map(
        lambda lines: "\n".join(lines).encode()
    ),
    st.tuples(st.text(max_size=40), _ERROR_BODIES).map(
        lambda pair: f"{pair[0]} [API Error: {_json_text(pair[1])}]"
    ),
)

_EXIT_CODES = st.none() | st.integers() | st.sampled_from([0, 1, 2, 124, 130, 137, -2, -9, 255])


@pytest.mark.parametrize("agent", [*AGENT_NAMES, "not-a-known-agent"])
@settings(_SETTINGS, max_examples=50)
@given(text=_OUTPUTS, exit_code=_EXIT_CODES)
def test_classify_output_never_raises_and_its_code_decides_kind_and_retryable(
    agent: str, text: str | bytes, exit_code: int | None
) -> None:
    failure = classify_output(text, agent=agent, exit_code=exit_code, now=_NOW)
    _assert_consistent(failure)
    _assert_no_internal_error(failure)


# --------------------------------------------------------------------------- classify


class _UnprintableError(Exception):
    """An error that cannot even describe itself."""

    def __str__(self) -> str:
        raise RuntimeError("__str__ is broken")

    def __repr__(self) -> str:
        raise RuntimeError("__repr__ is broken")


def _raise_unprintable(*_: object, **__: object) -> Any:
    raise _UnprintableError


def _broken_property() -> property:
    return property(_raise_unprintable)


class _HostileMapping:
    """Looks like headers; every way of reading it raises."""

    def items(self) -> Any:
        raise _UnprintableError

    def multi_items(self) -> Any:
        raise _UnprintableError

    def __iter__(self) -> Any:
        raise _UnprintableError

    def __getitem__(self, key: object) -> Any:
        raise _UnprintableError


class _HostileResponse:
    """A response whose body was never read: ``.text`` raises, other fields are odd."""

    def __init__(self, status_code: object, headers: object) -> None:
        self.status_code = status_code
        self.status = status_code
        self.headers = headers

    @property
    def text(self) -> str:
        raise _UnprintableError


# Class names the exception classifier keys on: the hostile instances take these names so
# they travel down the response, transport and cancellation paths alike.
_CLASS_NAMES = st.sampled_from(
    [
        "APIStatusError",
        "APIError",
        "HTTPStatusError",
        "ClientResponseError",
        "HTTPError",
        "GoogleAPICallError",
        "DeadlineExceeded",
        "APIConnectionError",
        "APITimeoutError",
        "ConnectError",
        "ConnectionError",
        "ReadTimeout",
        "CancelledError",
        "ValidationError",
        "SomethingElse",
    ]
)
_MODULES = st.sampled_from(
    ["anthropic._exceptions", "openai", "google.genai.errors", "httpx", __name__]
)
_BASES = st.sampled_from([Exception, OSError, ConnectionError, TimeoutError, ValueError])

_ODD_VALUES = st.one_of(
    _JSON,
    st.sampled_from(["429", "abc", "", "  ", " 503 ", "4.29e2", "-1", "٤٢٩"]),
    st.just(_HostileMapping()),
    st.builds(_HostileResponse, status_code=_JSON | st.just("429"), headers=_JSON),
    st.builds(
        _HostileResponse,
        status_code=st.sampled_from([429, 500, "503"]),
        headers=st.just(_HostileMapping()),
    ),
)
_ATTRIBUTES = st.sampled_from(
    [
        "status_code",
        "status",
        "http_status",
        "code",
        "headers",
        "body",
        "response_json",
        "details",
        "response",
        "message",
        "errno",
        "failure",
        "reason",
        "os_error",
        "last_attempt",
        "args",
    ]
)


@st.composite
def _hostile_exception(draw: st.DrawFn) -> BaseException:
    attrs: dict[str, Any] = {"__module__": draw(_MODULES)}
    if draw(st.booleans()):
        attrs["__str__"] = _raise_unprintable
    for name in draw(st.lists(_ATTRIBUTES, max_size=5, unique=True)):
        attrs[name] = _broken_property() if draw(st.booleans()) else draw(_ODD_VALUES)
    cls = type(draw(_CLASS_NAMES), (draw(_BASES),), attrs)
    args = draw(st.lists(_JSON, max_size=3))
    return cls(*args)


@st.composite
def _hostile_chain(draw: st.DrawFn) -> BaseException:
    """Hostile exceptions linked by causes, contexts and arguments, cycles included."""
    items = draw(st.lists(_hostile_exception(), min_size=1, max_size=4))
    indexes = st.integers(min_value=0, max_value=len(items) - 1)
    for item in items:
        if draw(st.booleans()):
            item.__cause__ = items[draw(indexes)]
        if draw(st.booleans()):
            item.__context__ = items[draw(indexes)]
        if "args" not in type(item).__dict__ and draw(st.booleans()):
            item.args = (*item.args, items[draw(indexes)])
    head = items[0]
    if draw(st.booleans()):
        return (
            ExceptionGroup("hostile", items)
            if all(isinstance(i, Exception) for i in items)
            else BaseExceptionGroup("hostile", items)
        )
    return head


@_SETTINGS
@given(exc=_hostile_chain(), provider=st.none() | st.sampled_from(["anthropic", "gemini", "x"]))
def test_classify_never_raises_on_hostile_exceptions(
    exc: BaseException, provider: str | None
) -> None:
    _assert_consistent(classify(exc, provider=provider, now=_NOW))


def test_classify_survives_an_exception_whose_str_raises() -> None:
    class UnprintableError(ConnectionError):
        def __str__(self) -> str:
            raise RuntimeError("no")

    _assert_consistent(classify(UnprintableError()))


def test_classify_survives_a_string_status_code() -> None:
    class StatusError(Exception):
        status_code = "not a number"

    _assert_consistent(classify(StatusError("bad gateway")))


def test_classify_survives_a_response_whose_text_raises() -> None:
    class HTTPStatusError(Exception):
        response = _HostileResponse(503, {"retry-after": "3"})

    failure = classify(HTTPStatusError("server error"))
    _assert_consistent(failure)
    assert failure.status == 503


def test_classify_survives_a_circular_cause_chain() -> None:
    first = ConnectionError("first")
    second = OSError("second")
    first.__cause__ = second
    second.__cause__ = first
    second.__context__ = second
    _assert_consistent(classify(first))


def test_classify_survives_an_attribute_that_raises_an_unprintable_error() -> None:
    class WrappedError(Exception):
        failure = _broken_property()

    _assert_consistent(classify(WrappedError("boom")))
