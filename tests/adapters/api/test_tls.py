"""``backstay.adapters.api._tls``: one TLS context per process for the SDK clients."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from backstay.adapters.api import _tls


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_tls, "_contexts", {})
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)


def test_the_context_is_built_once_and_shared() -> None:
    first = _tls.shared_ssl_context()
    assert isinstance(first, ssl.SSLContext)
    assert _tls.shared_ssl_context() is first


def test_the_context_verifies_certificates_and_host_names() -> None:
    context = _tls.shared_ssl_context()
    assert context.verify_mode is ssl.CERT_REQUIRED
    assert context.check_hostname


def test_another_ssl_cert_file_builds_another_context(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    first = _tls.shared_ssl_context()
    bundle = ssl.get_default_verify_paths().openssl_cafile
    if not Path(bundle).is_file():
        pytest.skip("no system CA bundle to point SSL_CERT_FILE at")
    monkeypatch.setenv("SSL_CERT_FILE", bundle)
    second = _tls.shared_ssl_context()
    assert second is not first
    assert _tls.shared_ssl_context() is second
