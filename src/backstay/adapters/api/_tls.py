"""``shared_ssl_context``: one TLS context per process for the API adapters' SDK clients.

Every attempt of an API adapter builds its SDK client afresh (its connections, timeout and
headers are the attempt's own). Left to itself, each SDK client also builds a new
``ssl.SSLContext`` and loads the whole CA bundle into it: about 40 ms of CPU per attempt,
which on a small machine caps a batch of short calls near ten a second. The context the
SDKs would build is the same every time, and a context is made to be shared by many
connections, so it is built once per process and handed to each client (``verify=``).

It is the context the SDKs' own HTTP library builds by default (``httpx2`` or ``httpx``
``create_ssl_context()``: the system's CA bundle, or ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``
when set); a change of those two variables builds a new one.

A client whose base URL is plain ``http://`` (a local gateway or proxy, the fake provider)
makes no TLS connection unless a proxy variable sends it through one, so when none is set
it is handed a context that loads no CA bundle (about 60 ms of CPU saved in a one-shot
``backstay run``). That context still requires a verified certificate and host name: it
trusts no authority, so a TLS connection made with it anyway fails, never goes unchecked.
"""

from __future__ import annotations

import os
import ssl
import threading
from typing import Any

__all__ = ["http_library", "shared_ssl_context"]

_VARIABLES = ("SSL_CERT_FILE", "SSL_CERT_DIR")
# Any ``*_proxy`` variable (``HTTP_PROXY``, ``ALL_PROXY``, …; any case) but ``NO_PROXY`` may
# send a plain-http request through a proxy reached over TLS.
_PROXY_SUFFIX = "_proxy"
_NOT_A_PROXY = "no_proxy"
_contexts: dict[tuple[str | None, ...], ssl.SSLContext] = {}
_lock = threading.Lock()
_untrusting: ssl.SSLContext | None = None


def http_library() -> Any:
    """The HTTP library the SDKs are built on: ``httpx2``, or ``httpx`` for older SDKs."""
    try:
        import httpx2 as http  # noqa: PLC0415 - the SDKs' own dependency, loaded with them
    except ImportError:
        import httpx as http  # type: ignore[no-redef]  # noqa: PLC0415 - older SDKs
    return http


def shared_ssl_context(base_url: str | None = None) -> ssl.SSLContext:
    """This process's TLS context for an SDK client of ``base_url`` (see the module
    docstring)."""
    if base_url is not None and _plain_http(base_url):
        return _no_authority_context()
    key = tuple(os.environ.get(name) for name in _VARIABLES)
    with _lock:
        context = _contexts.get(key)
        if context is None:
            context = http_library().create_ssl_context()
            _contexts[key] = context
        return context


def _plain_http(base_url: str) -> bool:
    """Whether a client of ``base_url`` makes no TLS connection: a plain ``http://`` URL,
    and no proxy variable set."""
    if not base_url.lower().startswith("http://"):
        return False
    return not any(
        value and name.lower().endswith(_PROXY_SUFFIX) and name.lower() != _NOT_A_PROXY
        for name, value in os.environ.items()
    )


def _no_authority_context() -> ssl.SSLContext:
    """A context that verifies certificates and host names and trusts no authority."""
    global _untrusting  # noqa: PLW0603 - one per process, made on first use
    with _lock:
        if _untrusting is None:
            _untrusting = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        return _untrusting
