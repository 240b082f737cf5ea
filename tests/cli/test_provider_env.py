"""``backstay run`` and ``backstay batch`` with nothing but the providers' standard variables
exported, against the fake provider: the agents take them from the environment, the key
stays out of every output and file, and ``--isolated-env`` / ``inherit_env: false`` give a
fully explicit environment."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest
from tests.cli.support import invoke

from backstay.fakeprovider import FakeProvider

# Shaped like a real Anthropic key, so that redaction recognises it.
KEY: Final = "sk-ant-api03-CANARYProviderEnvCanary0123456789"
MODELS: Final = {"anthropic-api": "claude-haiku-4-5", "openai-api": "gpt-5-mini"}


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeProvider]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BACKSTAY_CONFIG", raising=False)
    (tmp_path / "prompt.md").write_text("Say hello", encoding="utf-8")
    (tmp_path / "ws").mkdir()
    with FakeProvider() as provider:
        yield provider


def _export(monkeypatch: pytest.MonkeyPatch, adapter: str, url: str) -> None:
    if adapter == "anthropic-api":
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
    else:
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", f"{url}/v1")


def _run(adapter: str, *extra: str) -> Any:
    return invoke(
        "run",
        *("--adapter", adapter, "--model", MODELS[adapter]),
        *("--prompt-file", "prompt.md", "--workspace", "ws", "--output-dir", "out"),
        *("--timeout", "30"),
        *extra,
    )


def _metrics(tmp_path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((tmp_path / "out" / "metrics.json").read_text())
    return loaded


def _files_without_key(folder: Path) -> None:
    files = [path for path in folder.rglob("*") if path.is_file()]
    assert files
    for path in files:
        assert KEY.encode() not in path.read_bytes(), path


@pytest.mark.parametrize("adapter", list(MODELS))
def test_run_succeeds_with_only_the_standard_variables_exported(
    adapter: str, fake: FakeProvider, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _export(monkeypatch, adapter, fake.url)
    result = _run(adapter)
    assert result.exit_code == 0, result.output
    metrics = _metrics(tmp_path)
    assert (metrics["exit_code"], metrics["api_calls"]) == (0, 1)
    assert metrics["tokens_input"] > 0
    assert metrics["tokens_output"] > 0
    assert fake.stats().requests == 1
    assert KEY not in result.stdout + result.stderr
    _files_without_key(tmp_path / "out")


@pytest.mark.parametrize(
    "switch", [["--isolated-env"], ["--adapter-option", "inherit_env=false"]], ids=str
)
def test_an_isolated_run_gets_none_of_the_standard_variables(
    switch: list[str], fake: FakeProvider, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _export(monkeypatch, "anthropic-api", fake.url)
    result = _run("anthropic-api", *switch)
    assert result.exit_code == 1, result.output
    assert _metrics(tmp_path)["error"].startswith("ERR_AUTH_MISSING_CREDENTIALS")
    assert fake.stats().requests == 0


def test_a_base_url_setting_wins_over_the_inherited_variable(
    fake: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    _export(monkeypatch, "anthropic-api", fake.url)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")  # nothing listens there
    result = _run("anthropic-api", "--adapter-option", f"base_url={fake.url}")
    assert result.exit_code == 0, result.output
    assert fake.stats().requests == 1


def test_run_help_names_the_variables_of_each_adapter() -> None:
    result = invoke("run", "--help")
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())
    assert "--isolated-env" in text
    assert (
        "anthropic-api: ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN (key); ANTHROPIC_BASE_URL" in text
    )
    assert "codex: OPENAI_API_KEY (key); OPENAI_BASE_URL (URL)" in text


def _suite(tmp_path: Path, adapters: str = "") -> Path:
    path = tmp_path / "suite.yaml"
    path.write_text(
        "suite: inherit\n"
        "defaults: {adapter: anthropic-api, model: claude-haiku-4-5, timeout_s: 30}\n"
        f"{adapters}"
        "tasks:\n  - {id: hello, prompt: Say hello}\n",
        encoding="utf-8",
    )
    return path


def test_batch_succeeds_with_only_the_standard_variables_and_keeps_no_key(
    fake: FakeProvider, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _export(monkeypatch, "anthropic-api", fake.url)
    result = invoke("batch", _suite(tmp_path), "--state-dir", tmp_path / "state")
    assert result.exit_code == 0, result.output
    assert fake.stats().requests == 1
    assert KEY not in result.stdout + result.stderr
    _files_without_key(tmp_path / "state")


@pytest.mark.parametrize("how", ["flag", "suite"])
def test_an_isolated_batch_gets_none_of_the_standard_variables(
    how: str, fake: FakeProvider, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _export(monkeypatch, "anthropic-api", fake.url)
    adapters = "adapters: {anthropic-api: {inherit_env: false}}\n" if how == "suite" else ""
    flag = ["--isolated-env"] if how == "flag" else []
    result = invoke("batch", _suite(tmp_path, adapters), "--state-dir", tmp_path / "state", *flag)
    assert result.exit_code == 4, result.output  # escalated: a key is a person's to give
    assert "ERR_AUTH_MISSING_CREDENTIALS" in result.stdout
    assert fake.stats().requests == 0


def test_suite_check_says_what_each_adapter_takes_from_the_environment(tmp_path: Path) -> None:
    adapters = "adapters: {anthropic-api: {pass_env: [HTTPS_PROXY]}}\n"
    result = invoke("suite", "check", _suite(tmp_path, adapters))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == (
        "  anthropic-api takes ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN (key); "
        "ANTHROPIC_BASE_URL (URL) from the environment when set; also HTTPS_PROXY (pass_env)"
    )


def test_suite_check_says_what_a_fallbacks_adapter_takes_from_the_environment(
    tmp_path: Path,
) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(
        "suite: inherit\n"
        "defaults: {adapter: anthropic-api, model: claude-haiku-4-5, timeout_s: 30,\n"
        "  fallbacks: [{adapter: openai-api, model: gpt-5-mini}]}\n"
        "tasks:\n  - {id: hello, prompt: Say hello}\n",
        encoding="utf-8",
    )
    result = invoke("suite", "check", path)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1].startswith(
        "  openai-api takes OPENAI_API_KEY (key); OPENAI_BASE_URL (URL)"
    )
