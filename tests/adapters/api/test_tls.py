"""``backstay.adapters.api._tls``: one TLS context per process for the SDK clients."""

from __future__ import annotations

import os
import ssl
from pathlib import Path

import pytest

from backstay.adapters.api import _tls


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_tls, "_contexts", {})
    monkeypatch.setattr(_tls, "_untrusting", None)
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    for name in [n for n in os.environ if n.lower().endswith("_proxy")]:
        monkeypatch.delenv(name)


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


def _authorities(context: ssl.SSLContext) -> int:
    return int(context.cert_store_stats()["x509_ca"])


def test_a_plain_http_base_url_loads_no_ca_bundle_and_still_verifies() -> None:
    full = _tls.shared_ssl_context("https://api.anthropic.com")
    plain = _tls.shared_ssl_context("http://127.0.0.1:8080")
    if _authorities(full) == 0:
        pytest.skip("no system CA bundle: nothing to tell the contexts apart by")
    assert plain is not full
    assert _authorities(plain) == 0
    # It trusts no authority: any TLS connection made with it fails, none goes unchecked.
    assert plain.verify_mode is ssl.CERT_REQUIRED
    assert plain.check_hostname
    assert _tls.shared_ssl_context("HTTP://localhost/v1") is plain


@pytest.mark.parametrize("variable", ["HTTP_PROXY", "https_proxy", "ALL_PROXY"])
def test_a_proxy_variable_keeps_the_ca_bundle_for_a_plain_http_url(
    monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    monkeypatch.setenv(variable, "https://proxy.example:3128")
    assert _tls.shared_ssl_context("http://127.0.0.1:8080") is _tls.shared_ssl_context()


def test_no_proxy_alone_does_not_count_as_a_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_PROXY", "*")
    full = _tls.shared_ssl_context()
    assert _tls.shared_ssl_context("http://127.0.0.1:8080") is not full
