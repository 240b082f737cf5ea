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
"""

from __future__ import annotations

import os
import ssl
import threading
from typing import Any

__all__ = ["http_library", "shared_ssl_context"]

_VARIABLES = ("SSL_CERT_FILE", "SSL_CERT_DIR")
_contexts: dict[tuple[str | None, ...], ssl.SSLContext] = {}
_lock = threading.Lock()


def http_library() -> Any:
    """The HTTP library the SDKs are built on: ``httpx2``, or ``httpx`` for older SDKs."""
    try:
        import httpx2 as http  # noqa: PLC0415 - the SDKs' own dependency, loaded with them
    except ImportError:
        import httpx as http  # type: ignore[no-redef]  # noqa: PLC0415 - older SDKs
    return http


def shared_ssl_context() -> ssl.SSLContext:
    """This process's TLS context for the SDK clients (see the module docstring)."""
    key = tuple(os.environ.get(name) for name in _VARIABLES)
    with _lock:
        context = _contexts.get(key)
        if context is None:
            context = http_library().create_ssl_context()
            _contexts[key] = context
        return context
