"""``backstay explain`` and ``backstay --version``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest
from typer.testing import CliRunner

from backstay import __version__
from backstay.cli import app

runner = CliRunner()

ANTHROPIC_429 = json.dumps(
    {"type": "error", "error": {"type": "rate_limit_error", "message": "Rate limited"}}
)


def _json(args: list[str]) -> dict[str, object]:
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    data: dict[str, object] = json.loads(result.stdout)
    return data


def test_version_prints_the_package_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout.strip() == f"backstay {__version__}"


def test_explain_a_response_with_retry_after() -> None:
    data = _json(
        [
            "explain",
            "--provider",
            "anthropic",
            "--status",
            "429",
            "--header",
            "retry-after: 30",
            "--body",
            ANTHROPIC_429,
        ]
    )
    assert data["kind"] == "rate_limit"
    assert data["retry_after_s"] == 30.0
    assert data["action"] == "wait_and_retry"


def test_explain_reads_the_body_from_a_file(tmp_path: Path) -> None:
    body = tmp_path / "body.json"
    body.write_text(
        json.dumps(
            {"error": {"message": "You exceeded your current quota", "code": "insufficient_quota"}}
        )
    )
    data = _json(["explain", "--provider", "openai", "--status", "429", "--body", f"@{body}"])
    assert data["kind"] == "quota_exhausted"
    assert data["retryable"] is False


def test_explain_an_exception_by_name() -> None:
    data = _json(["explain", "--exception", "httpx.ReadTimeout"])
    assert data["code"] == "ERR_READ_TIMEOUT"


def test_explain_an_exception_that_is_not_installed_by_its_name() -> None:
    data = _json(["explain", "--exception", "somesdk.errors.ConnectTimeout: took too long"])
    assert data["kind"] == "timeout"


def test_explain_agent_output_from_a_file(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    out.write_text(
        json.dumps(
            {
                "type": "result",
                "subtype": "success",
                "is_error": True,
                "api_error_status": 529,
                "result": "API Error: 529 Overloaded",
            }
        )
    )
    data = _json(["explain", "--agent", "claude-code", "--output", f"@{out}", "--exit-code", "1"])
    assert data["kind"] == "server_error"
    assert data["details"] == {
        "source": "status",
        "evidence": "HTTP status 529, confirmed by 'Overloaded'",
        "agent": "claude-code",
        "exit_code": 1,
    }


def test_explain_prints_a_readable_table() -> None:
    result = runner.invoke(app, ["explain", "--status", "529", "--provider", "anthropic"])
    assert result.exit_code == 0
    assert "server_error" in result.stdout
    assert "retry_backoff" in result.stdout


DECIDED_BY = [
    pytest.param(
        ["--status", "400", "--body", '{"error": {"message": "x", "code": "tool_use_failed"}}'],
        "structured field: error.code = tool_use_failed",
        id="structured-field",
    ),
    pytest.param(
        ["--status", "400", "--body", '{"error": "the input was considered high risk"}'],
        "message pattern: message pattern matched 'considered high risk'",
        id="pattern",
    ),
    pytest.param(
        ["--status", "503", "--body", "<html>Service Unavailable</html>"],
        "status: HTTP status 503",
        id="status",
    ),
    pytest.param(
        ["--status", "500", "--body", 'Error code: 429 - {"error": {"message": "slow down"}}'],
        "status: status 429 named in the body under HTTP 500",
        id="status-named-in-a-wrapper",
    ),
    pytest.param(["--exception", "httpx.ReadTimeout"], "exception type", id="exception"),
]


@pytest.mark.parametrize(("args", "why"), DECIDED_BY)
def test_explain_shows_which_evidence_decided(args: list[str], why: str) -> None:
    result = runner.invoke(app, ["explain", *args], env={"COLUMNS": "240"})
    assert result.exit_code == 0, result.output
    row = next(line for line in result.stdout.splitlines() if "decided by" in line)
    assert why in row


def test_explain_shows_where_the_wait_came_from() -> None:
    body = json.dumps({"error": {"message": "resets in 9 days", "resets_in_seconds": 60}})
    data = _json(["explain", "--status", "429", "--body", body])
    details = data["details"]
    assert isinstance(details, dict)
    assert (data["retry_after_s"], details["wait_from"]) == (60.0, "body field resets_in_seconds")


def test_explain_examples_classify_every_built_in_example() -> None:
    result = runner.invoke(app, ["explain", "--examples", "--json"])
    assert result.exit_code == 0
    rows = json.loads(result.stdout)
    kinds = {row["example"]: row["failure"]["kind"] for row in rows}
    assert kinds["openai-quota"] == "quota_exhausted"
    assert kinds["gemini-per-day"] == "quota_exhausted"
    assert kinds["gemini-per-minute"] == "rate_limit"
    assert kinds["anthropic-stream-overload"] == "server_error"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["explain"], "give a response"),
        (["explain", "--body", "@/no/such/file"], "--body: no such file"),
        (["explain", "--agent", "nope", "--output", "x"], "unknown agent 'nope'"),
        (["explain", "--agent", "aider"], "--agent and --output go together"),
        (["explain", "--header", "no-colon", "--status", "500"], "expected 'Name: value'"),
        (["explain", "--exception", "x", "--body", "{}"], "choose one of"),
        (["explain", "--exception", "NotABuiltin"], "not a built-in exception"),
        (["explain", "--exception", "bad name!"], "dotted class name"),
    ],
)
def test_bad_arguments_exit_2_with_a_clear_message(args: list[str], message: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert message in result.stderr
    assert "Traceback" not in result.output


def test_a_non_numeric_status_exits_2() -> None:
    result = runner.invoke(app, ["explain", "--status", "abc"])
    assert result.exit_code == 2


def test_the_installed_console_script_runs() -> None:
    exe = shutil.which("backstay") or str(Path(sys.executable).with_name("backstay"))
    proc = subprocess.run(
        [exe, "explain", "--status", "503", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["code"] == "ERR_HTTP_503_UNAVAILABLE"


def _explain_in_a_process(spec: str, **env: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("backstay") or str(Path(sys.executable).with_name("backstay"))
    return subprocess.run(
        [exe, "explain", "--exception", spec, "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, **env},
    )


def test_explain_an_exception_does_not_import_the_module_it_names() -> None:
    proc = _explain_in_a_process("this.X: boom")
    assert proc.returncode == 0, proc.stderr
    assert "Beautiful is better than ugly" not in proc.stdout + proc.stderr
    data = json.loads(proc.stdout)
    assert data["details"]["exception"] == "this.X"
    assert data["message"] == "boom"


def test_explain_an_exception_runs_no_code_of_a_module_on_the_path(tmp_path: Path) -> None:
    marker = tmp_path / "imported"
    (tmp_path / "acme_errors.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n"
        "class Throttled(TimeoutError):\n    pass\n"
    )
    proc = _explain_in_a_process("acme_errors.Throttled: slow down", PYTHONPATH=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert not marker.exists()
    assert json.loads(proc.stdout)["details"]["exception"] == "acme_errors.Throttled"


def test_explain_an_sdk_exception_imports_it_and_classifies_by_its_real_class() -> None:
    # httpx.CloseError's name is unknown to the rules; its base NetworkError is not.
    proc = _explain_in_a_process("httpx.CloseError: boom")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["code"] == "ERR_NETWORK"


def test_explain_an_exception_of_an_already_imported_module_uses_its_class(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module = types.ModuleType("acme_sdk.errors")
    module.RetryLater = type("RetryLater", (TimeoutError,), {"__module__": "acme_sdk.errors"})  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "acme_sdk.errors", module)
    data = _json(["explain", "--exception", "acme_sdk.errors.RetryLater: later"])
    assert data["code"] == "ERR_TIMEOUT"
