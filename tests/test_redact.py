"""Secrets never leave backstay: not through ``redact``, nor any face of a ``Failure``.

Each canary below is shaped like a real credential and appears nowhere else, so finding
it in an output means it leaked.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import anthropic
import httpx
import pytest
import requests

from backstay import Failure, classify, classify_response, redact, redact_mapping
from backstay.redact import REDACTED

ANTHROPIC_KEY = (
    "sk-ant-api03-"
    "Qm7vT2xK9pLw4nRz8cYb3hJd6fGs1aUe5oIq0tNk2yXr7mWv4CbZ8lHj3gFd6sPa9eRu1iTo5wQy-Nx_kM2vB0AA"
)
OPENAI_KEY = (
    "sk-proj-"
    "Hx4Lm9Qr2Tv7Wz1Nc8Kb5Jd3Fg6Ps0Ya-Ue4Io9Rt2Wq7Zx1Vn8Mb5Kc3Ld6Hf0Gj_T3BlbkFJ"
    "p2Rw8Yt5Ui1Oq4As7Df0Gh3Jk6Lz9Xc2Vb5Nm8Qe1Wr4Ty7Ui0Op3As6Df9Gh2Jk5Lz8Xc1Vb4Nm7Q"
)
GOOGLE_KEY = "AIzaSyD4k9Lm2Qx7Vt1Wr8Np3Zc6Jb0Fh5Ge-s"
BEARER_TOKEN = "tok_live_5f2b8c1e9d7a4063b1e8f2c47a9d0e35"
ENV_NAME = "MY_SERVICE_TOKEN"
ENV_SECRET = "svc-4c1f8e2a9b7d3e60a5"


@dataclasses.dataclass(frozen=True)
class Canary:
    secret: str  # what must never appear
    written: str  # how it shows up in text: the key itself, or an Authorization value


CANARIES = {
    "anthropic-key": Canary(ANTHROPIC_KEY, ANTHROPIC_KEY),
    "openai-key": Canary(OPENAI_KEY, OPENAI_KEY),
    "google-key": Canary(GOOGLE_KEY, GOOGLE_KEY),
    "bearer-token": Canary(BEARER_TOKEN, f"Bearer {BEARER_TOKEN}"),
    "env-token": Canary(ENV_SECRET, ENV_SECRET),
}


@pytest.fixture(autouse=True)
def _service_token_in_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_NAME, ENV_SECRET)


@pytest.fixture(params=list(CANARIES))
def canary(request: pytest.FixtureRequest) -> Canary:
    return CANARIES[request.param]


def _surfaces(failure: Failure) -> dict[str, str]:
    """Every way a ``Failure`` can be shown, logged or sent."""
    return {
        "message": failure.message,
        "details": json.dumps(dict(failure.details), default=str),
        "details repr": repr(dict(failure.details)),
        "str": str(failure),
        "repr": repr(failure),
        "to_json": failure.to_json(),
        "to_dict": json.dumps(failure.to_dict(), default=str),
        "to_error_info": json.dumps(failure.to_error_info(), default=str),
        "to_adapter_error": json.dumps(failure.to_adapter_error(), default=str),
    }


def _assert_nowhere(secret: str, failure: Failure) -> None:
    leaks = [name for name, text in _surfaces(failure).items() if secret in text]
    assert not leaks, f"the secret leaked through {leaks}"


# Contexts a credential turns up in: error messages, headers, JSON, query strings, reprs.
_CONTEXTS = {
    "bare": "{w}",
    "sentence": "request failed with credentials {w} (check your settings)",
    "header-line": "Authorization: {w}\r\nContent-Type: application/json",
    "x-api-key-header": "x-api-key: {w}",
    "json-field": '{{"api_key": "{w}", "model": "claude-test"}}',
    "json-headers": '{{"headers": {{"authorization": "{w}", "x-goog-api-key": "{w}"}}}}',
    "python-repr": "{{'headers': {{'Authorization': '{w}'}}, 'status': 401}}",
    "query-string": "GET https://api.example.invalid/v1/models?key={w}&alt=json",
    "env-dump": "ANTHROPIC_API_KEY={w} OPENAI_API_KEY={w}",
    "traceback": 'Traceback (most recent call last):\n  File "x.py"\nValueError: bad key {w}\n',
    "multiline": "line one\n{w}\nline three",
}


def _in_context(canary: Canary, context: str) -> str:
    return _CONTEXTS[context].format(w=canary.written)


# --------------------------------------------------------------------------- redact


@pytest.mark.parametrize("context", list(_CONTEXTS))
def test_redact_removes_the_secret_in_every_context(canary: Canary, context: str) -> None:
    assert canary.secret not in redact(_in_context(canary, context))


def test_redact_marks_where_the_secret_was(canary: Canary) -> None:
    assert REDACTED in redact(f"failed with {canary.written}")


# Keys that name themselves by their prefix, found in encoded or escaped text where they
# follow a letter or digit directly.
_SELF_IDENTIFYING = ["anthropic-key", "openai-key", "google-key", "env-token"]
_GLUED_CONTEXTS = {
    "url-encoded-query": "POST /v1/proxy?target=%2Fv1%2Fmessages&api_key%3D{w}",
    "url-encoded-json": "data=%7B%22api_key%22%3A%22{w}%22%7D",
    "json-unicode-escape": '{{"config": "\\u0022{w}\\u0022"}}',
}


@pytest.mark.parametrize("context", list(_GLUED_CONTEXTS))
@pytest.mark.parametrize("name", _SELF_IDENTIFYING)
def test_redact_removes_a_key_glued_to_encoded_text(name: str, context: str) -> None:
    secret = CANARIES[name].secret
    assert secret not in redact(_GLUED_CONTEXTS[context].format(w=secret))


def test_redact_removes_the_secret_from_an_exception_object(canary: Canary) -> None:
    assert canary.secret not in redact(ValueError(f"invalid credentials {canary.written}"))


def test_redact_removes_every_occurrence_of_the_secret(canary: Canary) -> None:
    text = " | ".join([canary.written] * 5)
    assert canary.secret not in redact(text)


def test_redact_of_an_object_whose_str_raises_does_not_raise() -> None:
    class Unprintable:
        def __str__(self) -> str:
            raise RuntimeError("no")

    assert isinstance(redact(Unprintable()), str)


def test_environment_secret_is_redacted_only_while_it_is_in_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert ENV_SECRET not in redact(f"value {ENV_SECRET}")
    monkeypatch.delenv(ENV_NAME)
    assert ENV_SECRET in redact(f"value {ENV_SECRET}")


def test_secret_put_in_the_environment_after_redaction_began_is_redacted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    late = "late-arrival-9e1d7c5b3a"
    assert redact(f"value {late}") == f"value {late}"
    monkeypatch.setenv("LATE_API_KEY", late)
    assert late not in redact(f"value {late}")


def test_value_of_an_environment_variable_with_a_plain_name_is_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MY_SERVICE_REGION", "europe-west4-b-zone")
    assert redact("deployed in europe-west4-b-zone") == "deployed in europe-west4-b-zone"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Overloaded",
        "prompt is too long: 210000 tokens > 200000 maximum",
        "Rate limit reached for gpt-4o in organization org-Ab12 on tokens per min (TPM): "
        "Limit 30000, Used 29500, Requested 1200. Please try again in 1.4s.",
        "usage: input_tokens=1234 output_tokens=56 cache_read_input_tokens=0",
        "max_tokens: 4096, idempotency_key: 5d41402abc4b2a76",
        '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
        "[Errno 111] Connection refused: 127.0.0.1:8080",
        "task-runner-4 finished the risk-assessment step",
        "résumé · ‘quoted’ — 日本語のテキスト",
        "Authorization header missing",
        "GET https://api.example.invalid/v1/models?alt=json&page=2",
    ],
)
def test_text_without_secrets_is_unchanged(text: str) -> None:
    assert redact(text) == text


# --------------------------------------------------------------------------- redact_mapping


@pytest.mark.parametrize(
    "key",
    [
        "x-api-key",
        "X-Api-Key",
        "Authorization",
        "authorization",
        "api_key",
        "apiKey",
        "x-goog-api-key",
        "access_token",
        "refresh_token",
        "client_secret",
        "password",
        "Cookie",
        "proxy-authorization",
    ],
)
def test_redact_mapping_blanks_the_value_of_a_credential_key(key: str) -> None:
    value = "opaque-credential-value-123"
    assert redact_mapping({key: value}) == {key: REDACTED}


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("input_tokens", 1234),
        ("output_tokens", 56),
        ("max_tokens", 4096),
        ("cache_read_input_tokens", 0),
        ("idempotency_key", "5d41402abc4b2a76"),
        ("model", "claude-test"),
        ("request_id", "req_011CUn3ZKa"),
    ],
)
def test_redact_mapping_keeps_ordinary_keys_readable(key: str, value: object) -> None:
    assert redact_mapping({key: value}) == {key: value}


def test_redact_mapping_blanks_credential_keys_at_any_depth() -> None:
    value = {"request": {"headers": [{"x-api-key": "opaque-credential-value-123"}]}}
    assert redact_mapping(value) == {"request": {"headers": [{"x-api-key": REDACTED}]}}


def test_redact_mapping_removes_secrets_from_values_under_ordinary_keys(canary: Canary) -> None:
    value = {"note": f"sent {canary.written}", "items": [canary.written, (canary.written,)]}
    assert canary.secret not in json.dumps(redact_mapping(value))


def test_redact_mapping_keeps_a_usage_block_intact() -> None:
    usage = {"input_tokens": 12, "output_tokens": 3, "idempotency_key": "idem-42", "model": "m"}
    assert redact_mapping({"usage": usage}) == {"usage": usage}


# --------------------------------------------------------------------------- Failure


def test_failure_message_never_holds_the_secret(canary: Canary) -> None:
    failure = Failure(code="ERR_AUTH_INVALID_KEY", message=f"invalid key {canary.written}")
    assert canary.secret not in failure.message


def test_failure_details_never_hold_the_secret_at_any_depth(canary: Canary) -> None:
    details: dict[str, Any] = {
        "request": {"headers": {"x-api-key": canary.secret, "authorization": canary.written}},
        "echo": [f"key {canary.written}", {"deep": {"deeper": canary.written}}],
        "body_excerpt": f'{{"error": "bad key {canary.written}"}}',
        "error": ValueError(f"rejected {canary.written}"),
    }
    failure = Failure(code="ERR_HTTP_401_UNAUTHORIZED", details=details)
    assert canary.secret not in json.dumps(dict(failure.details), default=str)
    assert canary.secret not in repr(dict(failure.details))


def test_no_face_of_a_failure_shows_the_secret(canary: Canary) -> None:
    failure = Failure(
        code="ERR_AUTH_INVALID_KEY",
        message=f"invalid credentials: {canary.written}",
        provider="anthropic",
        status=401,
        details={"request": {"headers": {"Authorization": canary.written}}, "hint": canary.written},
    )
    _assert_nowhere(canary.secret, failure)


def test_failure_rebuilt_from_error_info_does_not_reveal_the_secret(canary: Canary) -> None:
    info = {
        "code": "ERR_AUTH_INVALID_KEY",
        "message": f"bad key {canary.written}",
        "details": {"headers": {"x-api-key": canary.secret}, "echo": canary.written},
    }
    _assert_nowhere(canary.secret, Failure.from_error_info(info))


def test_a_long_message_is_redacted_before_it_is_shortened(canary: Canary) -> None:
    failure = Failure(code="ERR_UNKNOWN", message="x" * 3990 + canary.written)
    assert canary.secret not in failure.message


def test_a_detail_text_longer_than_the_limit_is_redacted(canary: Canary) -> None:
    body = "x" * 100 + f" {canary.written} " + "y" * 3000
    failure = Failure(code="ERR_UNKNOWN", details={"body": body})
    assert canary.secret not in json.dumps(dict(failure.details))


# --------------------------------------------------------------------------- classify_response


def _echoing_bodies(canary: Canary) -> dict[str, object]:
    w = canary.written
    return {
        "anthropic-error-message": {
            "type": "error",
            "error": {"type": "authentication_error", "message": f"invalid x-api-key: {w}"},
        },
        "openai-error-message": {
            "error": {
                "message": f"Incorrect API key provided: {w}.",
                "type": "invalid_request_error",
                "code": "invalid_api_key",
            }
        },
        "request-headers-in-body": {
            "error": {"type": "invalid_request_error", "message": "bad request"},
            "request": {"headers": {"Authorization": w, "x-api-key": w, "x-goog-api-key": w}},
        },
        "json-text": json.dumps({"error": {"message": f"key {w} rejected", "code": 401}}),
        "json-bytes": json.dumps({"error": {"message": f"key {w} rejected"}}).encode(),
        "html-page": f"<html><body>Unauthorized: {w}</body></html>",
        "plain-text": f"upstream rejected credentials {w}",
        "sse-error-event": (
            "event: error\n"
            f'data: {{"type": "error", "error": {{"type": "api_error", "message": "{w}"}}}}\n\n'
        ),
        "error-string": {"error": f"forbidden for {w}"},
    }


_BODY_SHAPES = list(_echoing_bodies(CANARIES["anthropic-key"]))


@pytest.mark.parametrize("status", [200, 400, 401, 429, 500])
@pytest.mark.parametrize("shape", _BODY_SHAPES)
def test_classify_response_never_reveals_a_secret_echoed_in_the_body(
    canary: Canary, shape: str, status: int
) -> None:
    body = _echoing_bodies(canary)[shape]
    failure = classify_response(status, {"content-type": "application/json"}, body)
    _assert_nowhere(canary.secret, failure)


def test_classify_response_never_reveals_a_secret_in_the_response_headers(
    canary: Canary,
) -> None:
    headers = {
        "x-api-key": canary.written,
        "authorization": canary.written,
        "x-should-retry": "false",
    }
    failure = classify_response(401, headers, {"error": {"message": "unauthorized"}})
    _assert_nowhere(canary.secret, failure)


# --------------------------------------------------------------------------- classify


def _request(canary: Canary) -> httpx.Request:
    return httpx.Request(
        "POST",
        "https://api.example.invalid/v1/messages",
        headers={"x-api-key": canary.secret, "authorization": canary.written},
    )


def _plain_error(canary: Canary) -> BaseException:
    return ValueError(f"invalid api key {canary.written}")


def _connection_error(canary: Canary) -> BaseException:
    return ConnectionError(f"proxy refused CONNECT with Proxy-Authorization {canary.written}")


def _httpx_status_error(canary: Canary) -> BaseException:
    request = _request(canary)
    response = httpx.Response(
        401,
        request=request,
        json={"error": {"type": "authentication_error", "message": f"bad key {canary.written}"}},
    )
    return httpx.HTTPStatusError(
        f"Client error '401 Unauthorized' for {canary.written}", request=request, response=response
    )


def _anthropic_error(canary: Canary) -> BaseException:
    body = {
        "type": "error",
        "error": {"type": "authentication_error", "message": f"invalid x-api-key {canary.written}"},
    }
    response = httpx.Response(401, request=_request(canary), json=body)
    return anthropic.AuthenticationError(f"Error code: 401 - {body}", response=response, body=body)


def _requests_http_error(canary: Canary) -> BaseException:
    response = requests.Response()
    response.status_code = 403
    response._content = f'{{"error": {{"message": "forbidden: {canary.written}"}}}}'.encode()
    response.headers["x-api-key"] = canary.secret
    return requests.HTTPError(f"403 Client Error for key {canary.written}", response=response)


def _chained_error(canary: Canary) -> BaseException:
    outer = RuntimeError("request failed")
    outer.__cause__ = OSError(f"connect failed using {canary.written}")
    return outer


@pytest.mark.parametrize(
    "make",
    [
        _plain_error,
        _connection_error,
        _httpx_status_error,
        _anthropic_error,
        _requests_http_error,
        _chained_error,
    ],
    ids=["value-error", "connection-error", "httpx", "anthropic", "requests", "chained"],
)
def test_classify_never_reveals_a_secret_in_the_exception(canary: Canary, make: Any) -> None:
    _assert_nowhere(canary.secret, classify(make(canary)))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("postgres://app:s3cret-pw@db:5432/x", "postgres://app:[REDACTED]@db:5432/x"),
        ("https://user:tok_123@proxy:8080/v1", "https://user:[REDACTED]@proxy:8080/v1"),
        ("https://example.com/v1/messages", "https://example.com/v1/messages"),
    ],
)
def test_passwords_in_urls_are_redacted_and_plain_urls_kept(text: str, expected: str) -> None:
    assert redact(text) == expected
