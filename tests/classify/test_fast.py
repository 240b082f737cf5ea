"""The fast path of ``classify(exc)`` (``backstay.classify._fast``): a transport exception
seen before, with the same fingerprint, gets the remembered ``Failure``; it is always the
one the full classifier gives.

Every scenario of ``test_exceptions.py`` (real clients against servers on 127.0.0.1 that
refuse, reset, hang up, stall or answer errors) is produced twice: two distinct exceptions
of one scenario that share a fingerprint (the same text: the same port, when the scenario's
server keeps it) get the same answer, and it is exactly what the full rules say of each.
"""

from __future__ import annotations

import errno
import importlib
import os
from typing import Any

import anthropic
import httpx
import openai
import pytest
import requests
from tests.classify.test_exceptions import (
    _CASE_ARGS,
    _TABLES,
    Expected,
    Loopback,
    Produce,
    _aiohttp_refused,
    _anthropic_call,
    _httpx_refused,
    _openai_call,
    _requests_refused,
    _sdk_refused,
    _socket_refused,
    loopback,  # noqa: F401 - the fixture the scenarios run in
)

from backstay import Failure, classify
from backstay.classify import _fast
from backstay.classify.exceptions import classify_exception

_RESET = "[Errno 104] Connection reset by peer"
# The package, not the function ``backstay.classify`` that shadows it as an attribute.
classify_module = importlib.import_module("backstay.classify")


def _fresh(exc: BaseException) -> Failure:
    """The full classification, the fast path left out."""
    return classify_exception(exc)


@pytest.mark.parametrize(_CASE_ARGS, [case for table in _TABLES for case in table])
def test_a_remembered_failure_is_the_one_the_full_rules_give(
    loopback: Loopback,  # noqa: F811
    produce: Produce,
    raises: type[BaseException],
    expected: Expected,
) -> None:
    first = produce(loopback)
    assert classify(first) == _fresh(first)
    if _fast.fingerprint(first, None) is None:
        return  # not a transport exception, or one that carries a response
    remembered = classify(first)
    assert classify(first) is remembered
    second = produce(loopback)  # a new port in its text when the scenario needs a new server
    if _fast.fingerprint(second, None) == _fast.fingerprint(first, None):
        assert classify(second) is remembered
    assert classify(second) == _fresh(second)
    assert (remembered.code, remembered.kind, remembered.retryable) == expected


@pytest.mark.parametrize(
    "produce",
    [
        pytest.param(_socket_refused, id="socket"),
        pytest.param(_httpx_refused, id="httpx"),
        pytest.param(_requests_refused, id="requests"),
        pytest.param(_aiohttp_refused, id="aiohttp"),
        pytest.param(_sdk_refused(_anthropic_call), id="anthropic-sdk"),
        pytest.param(_sdk_refused(_openai_call), id="openai-sdk"),
    ],
)
def test_a_refused_connection_of_every_stack_takes_the_fast_path(
    loopback: Loopback,  # noqa: F811
    produce: Produce,
) -> None:
    assert _fast.fingerprint(produce(loopback), None) is not None


@pytest.mark.parametrize(
    "exc",
    [
        pytest.param(ConnectionError(_RESET), id="ConnectionError"),
        pytest.param(ConnectionResetError(errno.ECONNRESET, "reset"), id="ConnectionResetError"),
        pytest.param(TimeoutError("timed out"), id="TimeoutError"),
        pytest.param(OSError(errno.ENETUNREACH, "Network is unreachable"), id="OSError-errno"),
        pytest.param(httpx.ReadTimeout("read timed out"), id="httpx-ReadTimeout"),
        pytest.param(requests.ConnectionError("refused"), id="requests-ConnectionError"),
        pytest.param(
            openai.APIConnectionError(request=httpx.Request("GET", "http://127.0.0.1:9")),
            id="openai-APIConnectionError",
        ),
        pytest.param(
            anthropic.APITimeoutError(request=httpx.Request("GET", "http://127.0.0.1:9")),
            id="anthropic-APITimeoutError",
        ),
    ],
)
def test_a_transport_exception_seen_again_is_answered_from_memory(exc: BaseException) -> None:
    first = classify(exc)
    assert classify(exc) is first
    assert first == _fresh(exc)


def _with_response(status: int) -> httpx.HTTPStatusError:
    request = httpx.Request("POST", "http://127.0.0.1:9/v1/messages")
    response = httpx.Response(status, request=request, json={"error": {"type": "overloaded"}})
    return httpx.HTTPStatusError("server error", request=request, response=response)


def _connection_error_with(**attrs: Any) -> ConnectionError:
    exc = ConnectionError(_RESET)
    for name, value in attrs.items():
        setattr(exc, name, value)
    return exc


@pytest.mark.parametrize(
    "exc",
    [
        pytest.param(_with_response(529), id="httpx-HTTPStatusError"),
        pytest.param(_connection_error_with(status_code=429), id="status_code"),
        pytest.param(_connection_error_with(response=object()), id="response"),
        pytest.param(_connection_error_with(body={"error": "quota"}), id="body"),
        pytest.param(_connection_error_with(headers={"retry-after": "3"}), id="headers"),
        pytest.param(
            _connection_error_with(failure=Failure(code="ERR_LLM_RATE_LIMITED")),
            id="attached-failure",
        ),
        pytest.param(ValueError("connection reset"), id="not-a-transport-class"),
        pytest.param(
            requests.ConnectionError("refused", response=requests.Response()),
            id="requests-with-response",
        ),
    ],
)
def test_an_exception_that_carries_a_response_takes_the_full_path(exc: BaseException) -> None:
    assert _fast.fingerprint(exc, None) is None
    assert classify(exc) == _fresh(exc)


def test_a_cause_that_carries_a_response_sends_the_whole_chain_the_full_way() -> None:
    exc = ConnectionError(_RESET)
    exc.__cause__ = _with_response(503)
    assert _fast.fingerprint(exc, None) is None


def test_the_same_text_with_another_cause_is_another_fingerprint() -> None:
    refused = ConnectionError("connect failed")
    refused.__cause__ = ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")
    unreachable = ConnectionError("connect failed")
    unreachable.__cause__ = OSError(errno.EHOSTUNREACH, "No route to host")
    assert _fast.fingerprint(refused, None) != _fast.fingerprint(unreachable, None)
    assert classify(refused).code == "ERR_CONNECTION_REFUSED"
    assert classify(unreachable).code == "ERR_NETWORK_UNREACHABLE"
    assert classify(refused) == _fresh(refused)
    assert classify(unreachable) == _fresh(unreachable)


def test_the_provider_named_by_the_caller_is_part_of_the_fingerprint() -> None:
    exc = ConnectionError(_RESET)
    assert classify(exc, provider="anthropic").provider == "anthropic"
    assert classify(exc, provider="openai").provider == "openai"
    assert classify(exc).provider is None


def test_a_secret_that_appears_after_a_text_was_remembered_is_still_redacted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    canary = "canary-transport-key-0123456789"
    text = f"Cannot connect to https://127.0.0.1:9/v1?session={canary}"
    before = classify(ConnectionError(text))
    assert classify(ConnectionError(text)) is before
    monkeypatch.setenv("BACKSTAY_TEST_CANARY_TOKEN", canary)
    after = classify(ConnectionError(text))
    assert canary not in after.message
    assert after == _fresh(ConnectionError(text))


def test_a_failure_that_depends_on_the_clock_is_not_remembered() -> None:
    key = ("a key no exception has",)
    failure = Failure(code="ERR_LLM_RATE_LIMITED", retry_after_s=3.0)
    _fast.remember(key, failure, _fast.current_secrets())
    assert _fast.recall(key) is None


def test_a_new_exception_of_a_remembered_shape_does_not_run_the_rules(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    classify(ConnectionError(_RESET))
    ran: list[BaseException] = []

    def counting(exc: BaseException, **kwargs: Any) -> Failure:
        ran.append(exc)
        return classify_exception(exc, **kwargs)

    monkeypatch.setattr(classify_module, "classify_exception", counting)
    for _ in range(10):
        assert classify(ConnectionError(_RESET)).code == "ERR_CONNECTION_RESET"
    assert ran == []
    classify(ConnectionError("a text not seen before"))
    assert len(ran) == 1


def test_an_exception_with_an_unhashable_errno_is_classified_the_full_way() -> None:
    exc = OSError([errno.ECONNRESET], "reset")
    assert classify(exc) == _fresh(exc)
    assert classify(exc).details.get("source") != "classifier_error"


def test_a_lone_exception_is_recalled_under_the_key_its_fingerprint_gives() -> None:
    remembered = classify(ConnectionError(_RESET))
    lone = ConnectionError(_RESET)
    assert _fast.recall_lone(lone, None) is remembered
    assert _fast.lookup(lone, None) == (remembered, _fast.fingerprint(lone, None))


@pytest.mark.parametrize(
    "exc",
    [
        pytest.param(_connection_error_with(note="a plain attribute"), id="attribute"),
        pytest.param(ConnectionError(errno.ECONNRESET, "Connection reset by peer"), id="two-args"),
        pytest.param(ConnectionError(ConnectionRefusedError("refused")), id="exception-arg"),
        pytest.param(ValueError(_RESET), id="not-a-transport-class"),
    ],
)
def test_anything_but_a_lone_exception_is_left_to_the_fingerprint(exc: BaseException) -> None:
    classify(exc)
    assert _fast.recall_lone(exc, None) is None
    assert classify(exc) == _fresh(exc)


def test_a_lone_exception_with_a_cause_is_left_to_the_fingerprint() -> None:
    exc = ConnectionError(_RESET)
    exc.__cause__ = ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")
    classify(exc)
    assert _fast.recall_lone(exc, None) is None


class _Renamed(ConnectionError):
    """A transport class that prints something other than its argument."""

    def __str__(self) -> str:
        return f"renamed: {self.args[0]}"


def test_a_class_that_prints_its_own_text_is_not_answered_by_its_argument() -> None:
    classify(_Renamed(_RESET))
    exc = _Renamed(_RESET)
    assert _fast.recall_lone(exc, None) is None
    assert classify(exc) == _fresh(exc)
    assert classify(exc).message.startswith("renamed: ")


def test_an_errno_set_after_the_exception_was_made_is_read_by_the_full_rules() -> None:
    classify(OSError(_RESET))
    exc = OSError(_RESET)
    exc.errno = errno.ECONNREFUSED
    assert _fast.recall_lone(exc, None) is None
    assert classify(exc) == _fresh(exc)


def test_a_provider_other_than_the_class_s_own_is_left_to_the_fingerprint() -> None:
    remembered = classify(ConnectionError(_RESET))
    assert _fast.recall_lone(ConnectionError(_RESET), None) is remembered
    assert _fast.recall_lone(ConnectionError(_RESET), "openai") is None
    assert classify(ConnectionError(_RESET), provider="openai").provider == "openai"


def test_a_text_is_recalled_by_text_again_after_the_secrets_changed_and_changed_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    remembered = classify(ConnectionError(_RESET))
    with monkeypatch.context() as patched:
        patched.setenv("BACKSTAY_TEST_OTHER_TOKEN", "another-secret-value-0123456789")
        classify(ConnectionError("a text remembered under other secrets"))
    again = classify(ConnectionError(_RESET))
    assert again == remembered
    assert _fast.recall_lone(ConnectionError(_RESET), None) is again


def test_a_secret_in_a_replaced_environment_is_redacted_from_a_remembered_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    canary = "canary-replaced-environ-0123456789"
    text = f"Cannot connect to https://127.0.0.1:9/v1?session={canary}"
    before = classify(ConnectionError(text))
    assert _fast.recall_lone(ConnectionError(text), None) is before
    monkeypatch.setattr(os, "environ", {**os.environ, "BACKSTAY_TEST_CANARY_TOKEN": canary})
    assert _fast.recall_lone(ConnectionError(text), None) is None
    after = classify(ConnectionError(text))
    assert canary not in after.message


class _ErrnoThatFails(ConnectionError):
    """A transport class whose ``errno`` property can stop answering."""

    failing = False

    @property
    def errno(self) -> int | None:  # type: ignore[override]
        if type(self).failing:
            raise RuntimeError("errno cannot be read")
        return None


def test_an_errno_property_that_raises_is_no_answer_and_no_error() -> None:
    remembered = classify(_ErrnoThatFails(_RESET))
    assert _fast.recall_lone(_ErrnoThatFails(_RESET), None) is remembered
    _ErrnoThatFails.failing = True
    try:
        assert _fast.recall_lone(_ErrnoThatFails(_RESET), None) is None
        assert classify(_ErrnoThatFails(_RESET)).code.startswith("ERR_")
    finally:
        _ErrnoThatFails.failing = False
