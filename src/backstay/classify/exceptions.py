"""Exceptions of any origin → ``Failure``, without importing any SDK.

Classes are recognised by name along the MRO (most specific first), so the SDKs, HTTP
clients and their vendored copies are recognised whether installed or not, in every
version. Exceptions that carry an HTTP response go through the response classifier; the
transport ones are refined by walking their cause chain (``ConnectError`` caused by
``ConnectionRefusedError`` is ``ERR_CONNECTION_REFUSED``). Timeouts are tested before
connection errors, since SDK timeout classes subclass their connection classes.
"""

from __future__ import annotations

import datetime as _dt
import errno
from collections.abc import Iterator
from typing import Any, Final

from backstay.classify._bounds import bounded
from backstay.classify._decide import build_failure
from backstay.classify._evidence import read_evidence
from backstay.classify._guard import unreadable
from backstay.classify._http import as_int
from backstay.classify._patterns import match_message, match_transport
from backstay.failure import Failure
from backstay.taxonomy import CODES, FailureKind

_RESPONSE: Final = "response"  # the exception carries an HTTP response: read it

# Class name → code (or _RESPONSE). The first name found along the MRO decides.
_BY_NAME: Final[dict[str, str]] = {
    # Cancellation: never a failure to retry.
    "CancelledError": "ERR_CANCELLED",
    "Cancelled": "ERR_CANCELLED",
    "KeyboardInterrupt": "ERR_CANCELLED",
    "SystemExit": "ERR_CANCELLED",
    # Timeouts, most specific first (a ConnectTimeout is also a ConnectionError in requests).
    "ConnectTimeout": "ERR_CONNECT_TIMEOUT",
    "ConnectTimeoutError": "ERR_CONNECT_TIMEOUT",
    "ConnectionTimeoutError": "ERR_CONNECT_TIMEOUT",
    "ReadTimeout": "ERR_READ_TIMEOUT",
    "ReadTimeoutError": "ERR_READ_TIMEOUT",
    "SocketTimeoutError": "ERR_READ_TIMEOUT",
    "WriteTimeout": "ERR_WRITE_TIMEOUT",
    "PoolTimeout": "ERR_POOL_TIMEOUT",
    "APITimeoutError": "ERR_TIMEOUT",
    "ServerTimeoutError": "ERR_TIMEOUT",
    "TimeoutException": "ERR_TIMEOUT",
    "TimeoutExpired": "ERR_TIMEOUT",
    "TooSlowError": "ERR_TIMEOUT",
    "Timeout": "ERR_TIMEOUT",
    "TimeoutError": "ERR_TIMEOUT",
    "DeadlineExceeded": _RESPONSE,
    # Name resolution and TLS.
    "gaierror": "ERR_DNS_FAILURE",
    "herror": "ERR_DNS_FAILURE",
    "NameResolutionError": "ERR_DNS_FAILURE",
    "ClientConnectorDNSError": "ERR_DNS_FAILURE",
    "SSLCertVerificationError": "ERR_SSL_CERTIFICATE",
    "CertificateError": "ERR_SSL_CERTIFICATE",
    "ClientConnectorCertificateError": "ERR_SSL_CERTIFICATE",
    "SSLError": "ERR_SSL_ERROR",
    "ClientSSLError": "ERR_SSL_ERROR",
    "ClientConnectorSSLError": "ERR_SSL_ERROR",
    # Connections.
    "ProxyError": "ERR_PROXY_ERROR",
    "ClientProxyConnectionError": "ERR_PROXY_ERROR",
    "ConnectionRefusedError": "ERR_CONNECTION_REFUSED",
    "ConnectionResetError": "ERR_CONNECTION_RESET",
    "ClientConnectionResetError": "ERR_CONNECTION_RESET",
    "BrokenPipeError": "ERR_CONNECTION_RESET",
    "ConnectionAbortedError": "ERR_CONNECTION_CLOSED",
    "RemoteDisconnected": "ERR_CONNECTION_CLOSED",
    "RemoteProtocolError": "ERR_CONNECTION_CLOSED",
    "ServerDisconnectedError": "ERR_CONNECTION_CLOSED",
    "ChunkedEncodingError": "ERR_CONNECTION_CLOSED",
    "IncompleteRead": "ERR_CONNECTION_CLOSED",
    "ProtocolError": "ERR_CONNECTION_CLOSED",
    "ClientPayloadError": "ERR_CONNECTION_CLOSED",
    "ReadError": "ERR_CONNECTION_CLOSED",
    "WriteError": "ERR_CONNECTION_RESET",
    "ConnectError": "ERR_NETWORK",
    "NewConnectionError": "ERR_NETWORK",
    "ClientConnectorError": "ERR_NETWORK",
    "ClientOSError": "ERR_NETWORK",
    "ServerConnectionError": "ERR_NETWORK",
    "ClientConnectionError": "ERR_NETWORK",
    "APIConnectionError": "ERR_NETWORK",
    "NetworkError": "ERR_NETWORK",
    "TransportError": "ERR_NETWORK",
    "MaxRetryError": "ERR_NETWORK",
    "ConnectionError": "ERR_NETWORK",
    # The operating system refused access: retrying cannot change that.
    "PermissionError": "ERR_PERMISSION_DENIED",
    # Requests we built wrong.
    "InvalidURL": "ERR_INVALID_URL",
    "MissingSchema": "ERR_INVALID_URL",
    "InvalidSchema": "ERR_INVALID_URL",
    "URLRequired": "ERR_INVALID_URL",
    "UnsupportedProtocol": "ERR_INVALID_URL",
    "LocationParseError": "ERR_INVALID_URL",
    "LocalProtocolError": "ERR_REQUEST_INVALID",
    "InvalidHeader": "ERR_REQUEST_INVALID",
    "TooManyRedirects": "ERR_REQUEST_INVALID",
    # Responses we could not read; outputs that did not validate.
    "APIResponseValidationError": "ERR_RESPONSE_MALFORMED",
    "UnknownApiResponseError": "ERR_RESPONSE_MALFORMED",
    "ContentTypeError": "ERR_RESPONSE_MALFORMED",
    "DecodingError": "ERR_RESPONSE_MALFORMED",
    "DecodeError": "ERR_RESPONSE_MALFORMED",
    "ContentDecodingError": "ERR_RESPONSE_MALFORMED",
    "JSONDecodeError": "ERR_RESPONSE_MALFORMED",
    "LengthFinishReasonError": "ERR_OUTPUT_TRUNCATED",
    "ContentFilterFinishReasonError": "ERR_LLM_CONTENT_FILTER",
    "ValidationError": "ERR_OUTPUT_INVALID",
    # Exceptions that name a condition (litellm and other wrappers) but may carry a response.
    "ContextWindowExceededError": "ERR_LLM_CONTEXT_LENGTH",
    "ContentPolicyViolationError": "ERR_LLM_CONTENT_FILTER",
    "BudgetExceededError": "ERR_LIMIT_BUDGET",
    # Exceptions that carry an HTTP response.
    "APIStatusError": _RESPONSE,
    "APIError": _RESPONSE,
    "GoogleAPICallError": _RESPONSE,
    "HTTPStatusError": _RESPONSE,
    "ClientResponseError": _RESPONSE,
    "HTTPError": _RESPONSE,
}

_ERRNO: Final[dict[int, str]] = {
    errno.ECONNREFUSED: "ERR_CONNECTION_REFUSED",
    errno.ECONNRESET: "ERR_CONNECTION_RESET",
    errno.EPIPE: "ERR_CONNECTION_RESET",
    errno.ECONNABORTED: "ERR_CONNECTION_CLOSED",
    errno.ENOTCONN: "ERR_CONNECTION_CLOSED",
    errno.ETIMEDOUT: "ERR_TIMEOUT",
    errno.EHOSTUNREACH: "ERR_NETWORK_UNREACHABLE",
    errno.ENETUNREACH: "ERR_NETWORK_UNREACHABLE",
    errno.ENETDOWN: "ERR_NETWORK_UNREACHABLE",
    errno.EHOSTDOWN: "ERR_NETWORK_UNREACHABLE",
    errno.EADDRNOTAVAIL: "ERR_NETWORK",
    # The error contract's SocketError row: a socket operation the OS refused.
    errno.EBADF: "ERR_SOCKET_ERROR",
    errno.ENOTSOCK: "ERR_SOCKET_ERROR",
    errno.EADDRINUSE: "ERR_SOCKET_ERROR",
    errno.ENOBUFS: "ERR_SOCKET_ERROR",
}

_ROOT_PROVIDER: Final[dict[str, str]] = {
    "anthropic": "anthropic",
    "openai": "openai",
    "google": "gemini",
}

_MAX_CHAIN: Final = 12
_GENERIC: Final = frozenset({"ERR_NETWORK", "ERR_TIMEOUT", _RESPONSE})
_TRANSPORT_KINDS: Final = (FailureKind.NETWORK, FailureKind.TIMEOUT)


def _mro_code(exc: BaseException) -> str | None:
    for cls in type(exc).__mro__:
        code = _BY_NAME.get(cls.__name__)
        if code is not None:
            return code
    return None


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """The exception, its causes and contexts, and exceptions held in attributes."""
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo and len(seen) < _MAX_CHAIN:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        for attr in ("__cause__", "__context__", "reason", "os_error", "last_attempt"):
            value = _attr(current, attr)
            if isinstance(value, BaseException):
                todo.append(value)
        args = _attr(current, "args")
        if isinstance(args, tuple):
            todo.extend(arg for arg in args[:3] if isinstance(arg, BaseException))


def _errno_code(exc: BaseException) -> str | None:
    err = _attr(exc, "errno")
    return _ERRNO.get(err) if isinstance(err, int) else None


def _deep_code(exc: BaseException) -> str | None:
    """The transport code of the deepest cause below ``exc`` that names one: the OS error
    under a library's wrappers knows best what happened."""
    found: str | None = None
    for item in list(_chain(exc))[1:]:
        code = _mro_code(item)
        if code and code not in _GENERIC and CODES[code].kind in _TRANSPORT_KINDS:
            found = code
        else:
            found = _errno_code(item) or found
    return found


def _text_code(exc: BaseException) -> str | None:
    """Transport words in the messages of the chain: the weakest evidence."""
    for item in _chain(exc):
        code = match_transport(_safe_str(item))
        if code:
            return code
    return None


def _safe_str(exc: BaseException) -> str:
    """The exception's text, as far as the rules read it (``_bounds``)."""
    try:
        return bounded(str(exc))
    except Exception:
        return type(exc).__name__
    except BaseException as err:  # the object's own KeyboardInterrupt, SystemExit …
        unreadable(err)


def _provider_of(exc: BaseException) -> str | None:
    root = type(exc).__module__.split(".")[0]
    return _ROOT_PROVIDER.get(root)


def _attr(obj: object, *names: str) -> Any:
    for name in names:
        try:
            value = getattr(obj, name, None)
        except Exception:
            continue
        except BaseException as err:  # the object's own KeyboardInterrupt, SystemExit …
            unreadable(err)
        if value is not None:
            return value
    return None


def _response_failure(exc: BaseException, provider: str | None, now: _dt.datetime) -> Failure:
    response = _attr(exc, "response")
    status = as_int(_attr(exc, "status_code", "status", "http_status"))
    if status is None:
        status = as_int(_attr(exc, "code"))
    if status is None and response is not None:
        status = as_int(_attr(response, "status_code", "status"))
    headers = _attr(exc, "headers")
    if headers is None and response is not None:
        headers = _attr(response, "headers")
    body = _attr(exc, "body", "response_json", "details")
    if body is None and response is not None and status is not None and status >= 400:
        body = _response_text(response)
    cls_name = type(exc).__name__
    if status is None and cls_name == "APIError" and body is not None:
        status = 200  # openai raises a bare APIError for an error event inside a stream
    message = _attr(exc, "message")
    text = message if isinstance(message, str) and message else _safe_str(exc)
    ev = read_evidence(status, headers, body, provider=provider, message=text)
    if not ev.has_error_shape and not ev.message:
        ev.message = text
    return build_failure(ev, now=now)


def _response_text(response: object) -> str | None:
    try:
        text = response.text  # type: ignore[attr-defined]
    except Exception:  # a streamed body that was never read
        return None
    except BaseException as err:
        unreadable(err)
    return text if isinstance(text, str) else None


def classify_exception(
    exc: BaseException, *, provider: str | None = None, now: _dt.datetime | None = None
) -> Failure:
    """Classify any exception. Never raises."""
    now = now or _dt.datetime.now(_dt.UTC)
    attached = _attr(exc, "failure")
    if isinstance(attached, Failure):
        return attached
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        leaves = [e for e in exc.exceptions if _mro_code(e) != "ERR_CANCELLED"]
        return classify_exception((leaves or list(exc.exceptions))[0], provider=provider, now=now)
    provider = provider or _provider_of(exc)
    code = _mro_code(exc)
    if code == _RESPONSE or (code is None and _attr(exc, "status_code") is not None):
        return _response_failure(exc, provider, now)
    if code is not None and CODES[code].kind in _TRANSPORT_KINDS:
        # Library wrappers hide the real cause: the chain below usually knows more.
        refined = _deep_code(exc) or _errno_code(exc)
        if refined is None and code in _GENERIC:
            refined = _text_code(exc)
        if refined and (code == "ERR_NETWORK" or CODES[refined].kind is CODES[code].kind):
            code = refined
    if code is None:
        code = (
            _errno_code(exc)
            or _deep_code(exc)
            or _text_code(exc)
            or match_message(_safe_str(exc), None, None)
        )
    return Failure(
        code=code or "ERR_UNKNOWN",
        message=_safe_str(exc) or type(exc).__name__,
        provider=provider,
        details={"exception": f"{type(exc).__module__}.{type(exc).__qualname__}"},
    )
