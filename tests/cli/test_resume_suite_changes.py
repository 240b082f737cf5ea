"""``backstay resume`` compares the batch's suite file with the recorded specs: an edit
is named (task, fields), with the commands that apply it; an unchanged file says
nothing. Through the real stores: SQLite, and a real redis-server."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import pytest
from tests.cli.support import DONE, invoke, states_of, write_suite

from backstay.cli._state import ALL_SUCCEEDED, SOME_FAILED
from backstay.store.location import STORE_ENV_VAR, StoreLocation

FAILS_ONCE: Final = [[{"error": "context_overflow"}], DONE]


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BACKSTAY_CONFIG", raising=False)
    monkeypatch.delenv(STORE_ENV_VAR, raising=False)


@pytest.fixture(params=["sqlite", "redis"])
def store(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if request.param == "redis":
        location: StoreLocation = request.getfixturevalue("redis_location")
        assert location.url is not None
        monkeypatch.setenv(STORE_ENV_VAR, location.url)


def _batch(tmp_path: Path) -> tuple[Path, Path]:
    suite = write_suite(tmp_path, ["ok", "bad"], scenarios={"bad": FAILS_ONCE})
    state = tmp_path / "state"
    assert invoke("batch", suite, "--state-dir", state).exit_code == SOME_FAILED
    return suite, state


def _edit(suite: Path, old: str, new: str) -> None:
    suite.write_text(suite.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")


@pytest.mark.usefixtures("store")
def test_resume_names_the_edited_task_and_the_retry_that_applies_it(tmp_path: Path) -> None:
    suite, state = _batch(tmp_path)
    _edit(suite, "prompt: do bad", "prompt: do it better")
    resumed = invoke("resume", "--state-dir", state)
    assert resumed.exit_code == SOME_FAILED, resumed.output
    assert f"{suite.resolve()} changed since its tasks were recorded" in resumed.output
    assert "bad/T0-run_01 (failed): prompt changed" in resumed.output
    retry = f"backstay retry bad/T0-run_01 --suite {suite.resolve()} --state-dir {state}"
    assert retry in resumed.output
    applied = invoke("retry", "bad/T0-run_01", "--suite", suite.resolve(), "--state-dir", state)
    assert applied.exit_code == 0, applied.output
    again = invoke("resume", "--state-dir", state)
    assert again.exit_code == ALL_SUCCEEDED, again.output
    assert "changed since its tasks were recorded" not in again.output
    assert states_of(state)["bad/T0-run_01"] == "succeeded"


def test_an_unchanged_suite_adds_no_note(tmp_path: Path) -> None:
    _, state = _batch(tmp_path)
    resumed = invoke("resume", "--state-dir", state)
    assert "changed since" not in resumed.output


def test_a_task_added_to_the_file_is_named_with_batch_to_record_it(tmp_path: Path) -> None:
    suite, state = _batch(tmp_path)
    _edit(suite, "- id: bad\n", "- id: extra\n  prompt: do extra\n- id: bad\n")
    resumed = invoke("resume", "--state-dir", state)
    assert "new in the file: extra/T0-run_01" in resumed.output
    assert f"backstay batch {suite.resolve()} --state-dir {state}" in resumed.output
