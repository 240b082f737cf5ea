"""``backstay run --fallback`` with nothing but the providers' standard variables exported,
through the official SDKs against the fake provider: each candidate takes those of its own
adapter's provider from the caller's environment, and ``--isolated-env`` gives none of
them any."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

import pytest
from typer.testing import CliRunner, Result

from backstay.cli import app
from backstay.fakeprovider import FakeProvider, Fault, FaultKind, Scenario

PRIMARY: Final = "claude-haiku-4-5"
SPARE: Final = "gpt-5-mini"
# Shaped like real keys, so that redaction recognises them.
ANTHROPIC_KEY: Final = "sk-ant-api03-CANARYFallbackPrimary0123456789"
OPENAI_KEY: Final = "sk-proj-CANARYFallbackSpareKey0123456789abcdef"
runner = CliRunner()


@pytest.fixture(autouse=True)
def _setting(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BACKSTAY_CONFIG", raising=False)
    (tmp_path / "prompt.md").write_text("Say hello", encoding="utf-8")
    (tmp_path / "ws").mkdir()


def _export(monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    """Each provider's key and endpoint, only as its standard variables."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", f"{url}/v1")


def _run(*extra: str) -> Result:
    args = [
        *("run", "--adapter", "anthropic-api", "--model", PRIMARY),
        *("--prompt-file", "prompt.md", "--workspace", "ws", "--output-dir", "out"),
        *("--timeout", "20", "--fallback", f"openai-api:{SPARE}"),
        *extra,
    ]
    return runner.invoke(app, args)


def _metrics(tmp_path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((tmp_path / "out" / "metrics.json").read_text())
    return loaded


def test_a_fallback_answers_with_the_key_its_providers_variable_holds(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    down = Fault(kind=FaultKind.SERVER_ERROR, model=PRIMARY)
    with FakeProvider(Scenario(faults=(down,))) as fake:
        _export(monkeypatch, fake.url)
        result = _run()
        by_api = dict(fake.stats().by_api)
    assert result.exit_code == 0, result.output
    assert by_api == {"anthropic": 1, "openai-chat": 1}
    metrics = _metrics(tmp_path)
    assert (metrics["adapter"], metrics["model"], metrics["error"]) == ("openai-api", SPARE, None)
    assert metrics["candidates"] == [f"anthropic-api/{PRIMARY}", f"openai-api/{SPARE}"]
    files = [path for path in (tmp_path / "out").rglob("*") if path.is_file()]
    assert files
    for path in files:
        data = path.read_bytes()
        assert OPENAI_KEY.encode() not in data, path
        assert ANTHROPIC_KEY.encode() not in data, path
    assert OPENAI_KEY not in result.output
    assert ANTHROPIC_KEY not in result.output


def test_an_isolated_run_gives_no_candidate_its_providers_variables(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with FakeProvider(Scenario()) as fake:
        _export(monkeypatch, fake.url)
        result = _run("--isolated-env", "--no-retry")
        requests = fake.stats().requests
    assert result.exit_code == 1, result.output
    assert requests == 0
    assert _metrics(tmp_path)["error"].startswith("ERR_AUTH_MISSING_CREDENTIALS")
