"""Where a command writes, it never mixes with what is there: ``batch --state-dir``
refuses a non-empty directory that holds no batch (``--allow-non-empty`` allows it),
``run --output-dir`` refuses a directory a run already wrote to (never half-appended);
and ``agents list --dir X`` hints at the install command with ``--dir X``."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.cli.support import DONE, invoke, write_suite

from backstay.cli._errors import USAGE_ERROR
from backstay.cli._state import ALL_SUCCEEDED


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BACKSTAY_CONFIG", raising=False)
    monkeypatch.delenv("BACKSTAY_STORE", raising=False)


def test_batch_refuses_a_non_empty_directory_that_holds_no_batch(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, ["a"])
    refused = invoke("batch", suite, "--state-dir", ".")
    assert refused.exit_code == USAGE_ERROR, refused.output
    assert "error: --state-dir: . is not empty (suite.yaml) and holds no batch" in refused.output
    assert "--allow-non-empty" in refused.output
    assert not (tmp_path / "batch.json").exists()
    assert not (tmp_path / "state.sqlite").exists()


def test_allow_non_empty_uses_the_directory_and_a_batch_there_continues(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, ["a"])
    ran = invoke("batch", suite, "--state-dir", ".", "--allow-non-empty")
    assert ran.exit_code == ALL_SUCCEEDED, ran.output
    again = invoke("batch", suite, "--state-dir", ".")  # a batch is there now: continued
    assert again.exit_code == ALL_SUCCEEDED, again.output


def test_batch_takes_an_empty_directory(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    result = invoke("batch", write_suite(tmp_path, ["a"]), "--state-dir", "empty")
    assert result.exit_code == ALL_SUCCEEDED, result.output


def _run(tmp_path: Path, output: str) -> tuple[int, str]:
    (tmp_path / "p.txt").write_text("do it", encoding="utf-8")
    (tmp_path / "ws").mkdir(exist_ok=True)
    suite_like = tmp_path / "scenario.yaml"
    suite_like.write_text(f"attempts: [{DONE!r}]".replace("'", '"'), encoding="utf-8")
    result = invoke(
        "run", "--adapter", "mock", "--model", "m", "--prompt-file", "p.txt", "--workspace",
        "ws", "--output-dir", output, "--adapter-option", f"scenario={suite_like}",
    )  # fmt: skip
    return result.exit_code, result.output


def test_run_refuses_an_output_dir_a_run_wrote_to(tmp_path: Path) -> None:
    assert _run(tmp_path, "out")[0] == 0
    first = (tmp_path / "out" / "metrics.json").read_text(encoding="utf-8")
    code, output = _run(tmp_path, "out")
    assert code == USAGE_ERROR, output
    assert "error: --output-dir: out already holds files (" in output
    assert (tmp_path / "out" / "metrics.json").read_text(encoding="utf-8") == first
    assert _run(tmp_path, "out2")[0] == 0  # a new one is used


def test_agents_list_hints_with_the_dir_it_was_given(tmp_path: Path) -> None:
    result = invoke("agents", "list", "--dir", tmp_path / "my agents")
    assert result.exit_code == 0, result.output
    unwrapped = result.output.replace("\n", "")
    assert f"run `backstay agents install gemini-cli --dir '{tmp_path / 'my agents'}'`" in unwrapped
