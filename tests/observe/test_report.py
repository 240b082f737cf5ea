"""The HTML report: one self-contained file with every section, redacted, links relative."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.cli.support import invoke
from tests.observe.support import finished_batch, log_circuit

from backstay.engine.circuit_log import CircuitChange
from backstay.observe.report import write_report


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    found = finished_batch(tmp_path_factory.mktemp("batch"))
    log_circuit(found, "mock/mock-model", CircuitChange.OPENED, CircuitChange.WAITED)
    return found


@pytest.fixture(scope="module")
def html(state: Path) -> str:
    return write_report(state).read_text(encoding="utf-8")


def test_every_section_is_there(html: str) -> None:
    for section in ("outcome", "failures", "timeline", "waits", "usage", "escalations", "tasks"):
        assert f'<section id="{section}">' in html


def test_nothing_is_fetched_from_anywhere(html: str) -> None:
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)
    assert "<link" not in html
    assert "default-src 'none'" in html


def test_charts_are_inline_svg(html: str) -> None:
    assert html.count("<svg") >= 4


def test_failed_attempts_show_their_evidence_and_link_their_logs(html: str) -> None:
    assert "context_limit/ERR_LLM_CONTEXT_LENGTH" in html
    assert 'href="runs/overflow/T0/run_01/attempt_1/"' in html


def test_open_escalations_are_listed(html: str) -> None:
    escalations = html.split('<section id="escalations">')[1].split("</section>", maxsplit=1)[0]
    assert "ERR_LLM_CONTENT_FILTER" in escalations
    assert "ERR_LLM_USAGE_LIMIT" in escalations


def test_a_report_elsewhere_links_back_to_the_logs(state: Path, tmp_path: Path) -> None:
    text = write_report(state, tmp_path / "out.html").read_text(encoding="utf-8")
    (link,) = set(re.findall(r'href="([^"]*overflow/T0/run_01/attempt_1/)"', text))
    assert (tmp_path / link).resolve() == (state / "runs/overflow/T0/run_01/attempt_1").resolve()


def test_the_command_writes_the_file_and_prints_its_path(state: Path, tmp_path: Path) -> None:
    result = invoke("report", "--state-dir", state, "--output", tmp_path / "r.html")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == str(tmp_path / "r.html")
    assert (tmp_path / "r.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_the_command_without_a_batch_exits_2(tmp_path: Path) -> None:
    result = invoke("report", "--state-dir", tmp_path / "none")
    assert result.exit_code == 2
    assert "no batch ran there" in result.output


def test_a_batch_without_circuit_changes_has_its_timeline(tmp_path: Path) -> None:
    html = write_report(finished_batch(tmp_path)).read_text(encoding="utf-8")
    assert '<section id="timeline">' in html
