"""What the report and ``/metrics`` show of main's fallback and budget records: the
requested and the answering model of each task, and paused tasks by reason."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Final

from tests.engine.support import ScriptedAdapter, clock, engine, spec
from tests.observe.support import finished_batch

from backstay.adapters.mock import MockAdapter
from backstay.adapters.usage import Usage
from backstay.fallback import Candidate
from backstay.observe.prometheus import render_metrics
from backstay.observe.report import write_report
from backstay.observe.snapshot import read_state
from backstay.policy.spend import SpendBudget

DONE: Final[list[dict[str, Any]]] = [{"result": "done", "input_tokens": 10, "output_tokens": 5}]
CENT: Final = Usage(input_tokens=100, output_tokens=20, cost_usd=0.01, api_calls=1)


def _row(html: str, task_id: str) -> str:
    found = re.search(rf"<tr class=\"s-\w+\"><td>{task_id}/[^<]*</td>.*?</tr>", html)
    assert found is not None, html
    return found.group(0)


def test_the_report_shows_the_requested_and_the_answering_model(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    overloaded = [{"error": "overloaded"}]
    config = {"scenario": {"attempts": [overloaded, DONE]}, "state_dir": str(tmp_path / "mock")}
    moved = spec(
        workspace,
        "moved",
        adapter="mock",
        model="mock-main",
        config=config,
        fallbacks=(Candidate(adapter="mock", model="mock-spare"),),
    )
    state = tmp_path / "st"
    with engine(state, MockAdapter(), fake=clock()) as eng:
        eng.run_sync([moved])
    row = _row(write_report(state).read_text(encoding="utf-8"), "moved")
    assert '<td>mock-main</td><td class="fell-back">mock-spare</td>' in row


def test_a_task_on_its_own_model_shows_it_twice(tmp_path: Path) -> None:
    html = write_report(finished_batch(tmp_path)).read_text(encoding="utf-8")
    assert "<th>requested model</th><th>answering model</th>" in html
    assert "<td>mock-model</td><td>mock-model</td>" in html
    assert "fell-back" not in html


def _paused(state: Path) -> dict[str, float]:
    return {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in render_metrics(read_state(state)).splitlines()
        if line.startswith("backstay_tasks_paused{")
    }


def test_tasks_paused_by_a_budget_are_counted_by_reason(tmp_path: Path) -> None:
    adapter = ScriptedAdapter({"t1": [CENT], "t2": [CENT], "t3": [CENT]})
    specs = [spec(tmp_path, t) for t in ("t1", "t2", "t3")]
    state = tmp_path / "s"
    with engine(state, adapter, budget=SpendBudget(usd=0.025), concurrency=1) as eng:
        eng.run_sync(specs)
    assert _paused(state) == {
        'backstay_tasks_paused{reason="budget_exceeded"}': 1,
        'backstay_tasks_paused{reason="other"}': 0,
    }


def test_a_task_paused_for_its_quota_is_other(tmp_path: Path) -> None:
    assert _paused(finished_batch(tmp_path)) == {
        'backstay_tasks_paused{reason="budget_exceeded"}': 0,
        'backstay_tasks_paused{reason="other"}': 1,
    }
