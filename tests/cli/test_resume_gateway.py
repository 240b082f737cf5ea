"""``backstay resume`` sends its agents through a gateway as the batch did: a suite's
``gateway: false`` is kept in the batch's ``batch.json`` and holds on ``resume`` (it has
no suite to read); ``--gateway URL`` still names one."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.cli.support import invoke, write_suite

import backstay.cli.resume as resume_command
from backstay.cli._state import ALL_SUCCEEDED
from backstay.engine import BATCH_FILE, read_identity


@pytest.fixture(autouse=True)
def _no_stray_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BACKSTAY_CONFIG", raising=False)


def _suite(tmp_path: Path, gateway: bool | None) -> Path:
    path = write_suite(tmp_path, ["a"])
    if gateway is not None:
        with path.open("a", encoding="utf-8") as file:
            file.write(f"gateway: {str(gateway).lower()}\n")
    return path


def _resumed_with(
    monkeypatch: pytest.MonkeyPatch, state: Path, *flags: str
) -> list[dict[str, Any]]:
    """``backstay resume`` of ``state``: what its agent gateway was asked for."""
    asked: list[dict[str, Any]] = []
    real = resume_command.agent_gateway

    @contextlib.contextmanager
    def recording(adapters: Any, **options: Any) -> Iterator[str | None]:
        asked.append({"enabled": options["enabled"], "url": options["url"]})
        with real(adapters, **options) as url:
            yield url

    monkeypatch.setattr(resume_command, "agent_gateway", recording)
    result = invoke("resume", "--state-dir", state, *flags)
    assert result.exit_code == ALL_SUCCEEDED, result.output
    return asked


@pytest.mark.parametrize(("gateway", "kept"), [(None, True), (True, True), (False, False)])
def test_the_suites_gateway_is_kept_in_the_batch_file(
    tmp_path: Path, gateway: bool | None, kept: bool
) -> None:
    result = invoke("batch", _suite(tmp_path, gateway), "--state-dir", "state")
    assert result.exit_code == ALL_SUCCEEDED, result.output
    identity = read_identity(tmp_path / "state")
    assert identity is not None
    assert identity.gateway is kept


def test_resume_of_a_batch_whose_suite_says_gateway_false_starts_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    invoke("batch", _suite(tmp_path, False), "--state-dir", "state")
    assert _resumed_with(monkeypatch, tmp_path / "state") == [{"enabled": False, "url": None}]


def test_resume_of_a_batch_with_its_gateway_on_keeps_it_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    invoke("batch", _suite(tmp_path, None), "--state-dir", "state")
    assert _resumed_with(monkeypatch, tmp_path / "state") == [{"enabled": True, "url": None}]
    assert _resumed_with(monkeypatch, tmp_path / "state", "--no-gateway") == [
        {"enabled": False, "url": None}
    ]


def test_a_batch_file_from_before_the_key_means_the_gateway_is_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    invoke("batch", _suite(tmp_path, False), "--state-dir", "state")
    path = tmp_path / "state" / BATCH_FILE
    data = json.loads(path.read_text(encoding="utf-8"))
    del data["gateway"]
    path.write_text(json.dumps(data), encoding="utf-8")
    assert _resumed_with(monkeypatch, tmp_path / "state") == [{"enabled": True, "url": None}]


def test_a_batch_file_whose_gateway_is_not_a_boolean_is_damaged(tmp_path: Path) -> None:
    invoke("batch", _suite(tmp_path, None), "--state-dir", "state")
    path = tmp_path / "state" / BATCH_FILE
    data = json.loads(path.read_text(encoding="utf-8"))
    data["gateway"] = "no"
    path.write_text(json.dumps(data), encoding="utf-8")
    result = invoke("resume", "--state-dir", tmp_path / "state")
    assert result.exit_code == 2
    assert "is damaged" in result.output
