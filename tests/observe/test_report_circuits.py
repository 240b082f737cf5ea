"""The HTML report is titled by the suite's name (not a local path) and has a circuits
section: each breaker's openings and why, probes, closings, the tasks' waits and where
it stood last. A real batch's state file, its circuit log written as the engine does."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest
from tests.cli.support import invoke, write_suite

from backstay.engine.circuit_log import CircuitChange, CircuitEntry
from backstay.store.sqlite.circuit_log import SQLiteCircuitLog

BREAKER = "mock/mock-model"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BACKSTAY_CONFIG", raising=False)
    monkeypatch.delenv("BACKSTAY_STORE", raising=False)


def _report(tmp_path: Path) -> str:
    result = invoke("report", "--state-dir", "s", "--output", tmp_path / "r.html")
    assert result.exit_code == 0, result.output
    return (tmp_path / "r.html").read_text(encoding="utf-8")


def _batch(tmp_path: Path) -> None:
    assert invoke("batch", write_suite(tmp_path, ["a"]), "--state-dir", "s").exit_code == 0


def test_the_title_is_the_suites_name_and_run(tmp_path: Path) -> None:
    _batch(tmp_path)
    html = _report(tmp_path)
    found = re.search(r"<h1>(.*?)</h1>", html)
    assert found is not None
    assert re.fullmatch(r"backstay report: nightly \(\d{8}T\d{6}Z-[0-9a-f]{6}\)", found.group(1))
    assert str(tmp_path) not in found.group(1)


def test_the_circuits_section_counts_each_breakers_changes(tmp_path: Path) -> None:
    _batch(tmp_path)
    at = dt.datetime.now(dt.UTC)
    changes = [
        (CircuitChange.OPENED, "consecutive_failures", None),
        (CircuitChange.WAITED, "", 2.5),
        (CircuitChange.WAITED, "", 1.0),
        (CircuitChange.HALF_OPENED, "", None),
        (CircuitChange.OPENED, "probe_failed", None),
    ]
    with SQLiteCircuitLog(tmp_path / "s") as log:
        for i, (change, reason, wait) in enumerate(changes):
            log.add(CircuitEntry(breaker=BREAKER, change=change, at=at + dt.timedelta(seconds=i),
                                 reason=reason, wait_s=wait))  # fmt: skip
    html = _report(tmp_path)
    section = html.split('<section id="circuits">', 1)[1].split("</section>", 1)[0]
    cells = re.findall(r"<td>(.*?)</td>", section)
    assert cells == [
        BREAKER, "2", "consecutive failures ×1, probe failed ×1", "1", "0", "2 (3.5 s)", "open",
    ]  # fmt: skip


def test_a_batch_without_circuit_changes_says_so(tmp_path: Path) -> None:
    _batch(tmp_path)
    assert "No circuit opened" in _report(tmp_path)
