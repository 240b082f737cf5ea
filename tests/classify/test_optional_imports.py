"""Classification works, and imports nothing, where no SDK or HTTP client is installed."""

from __future__ import annotations

import subprocess
import sys
import textwrap

BLOCKED = (
    "anthropic",
    "openai",
    "google",
    "httpx",
    "httpx2",
    "httpcore",
    "requests",
    "urllib3",
    "aiohttp",
)


def _run(code: str) -> subprocess.CompletedProcess[str]:
    prelude = textwrap.dedent(
        f"""
        import sys
        for name in {BLOCKED!r}:
            sys.modules[name] = None  # any import of it now raises ImportError
        """
    )
    return subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_classification_needs_no_sdk_installed() -> None:
    proc = _run(
        """
        import backstay

        class APITimeoutError(Exception):
            pass
        APITimeoutError.__module__ = "anthropic._exceptions"

        assert backstay.classify(APITimeoutError("Request timed out.")).kind == "timeout"
        assert backstay.classify_response(529, {}, "", provider="anthropic").kind == "server_error"
        assert backstay.classify_output("Done.", agent="aider", exit_code=0).code == "ERR_UNKNOWN"
        print("ok")
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


def test_importing_backstay_loads_no_cli_sdk_or_engine_module() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, backstay; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('typer', 'rich', 'anthropic', 'openai', 'google', 'httpx', 'requests', 'aiohttp',"
            " 'yaml')"
            " or m.startswith(('backstay.engine', 'backstay.adapters', 'backstay.config'))))",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
