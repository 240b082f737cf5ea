"""examples/agent-runtime: the suite runs to the end with `backstay batch` against the
fake provider acting out the example's scenario."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import pytest
from typer.testing import CliRunner

from backstay.cli import app
from backstay.fakeprovider import FakeProvider, load_scenario

ROOT: Final = Path(__file__).parents[2]
EXAMPLE: Final = ROOT / "examples" / "agent-runtime"
KEY: Final = "sk-ant-api03-EXAMPLEcanary0123456789abcdefABCDEFgh"


def test_the_agent_runtime_example_runs_to_the_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeProvider(load_scenario(EXAMPLE / "scenario.yaml")) as fake:
        suite = (EXAMPLE / "suite.yaml").read_text(encoding="utf-8")
        assert "http://127.0.0.1:8788" in suite
        (tmp_path / "suite.yaml").write_text(
            suite.replace("http://127.0.0.1:8788", fake.url), encoding="utf-8"
        )
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        state = tmp_path / "state"
        result = CliRunner().invoke(
            app, ["batch", str(tmp_path / "suite.yaml"), "--state-dir", str(state)]
        )
        stats = fake.stats()
    assert result.exit_code == 0, result.output
    assert "1 succeeded" in result.output
    notes = state / "runs" / "notes" / "T0" / "run_01" / "workspace" / "notes.txt"
    assert notes.read_text(encoding="utf-8") == "hello\n"
    assert stats.by_fault == {"rate_limit": 1}
    assert KEY not in result.output


def test_a_batch_refuses_a_framework_backstay_yaml_disables(tmp_path: Path) -> None:
    config = tmp_path / "backstay.yaml"
    config.write_text("frameworks:\n  agent-runtime: {enabled: false}\n", encoding="utf-8")
    result = CliRunner().invoke(
        app,
        [
            "batch",
            str(EXAMPLE / "suite.yaml"),
            "--state-dir",
            str(tmp_path / "state"),
            "--config",
            str(config),
        ],
    )
    assert result.exit_code == 2
    assert "'agent-runtime', which backstay.yaml disables" in result.output
    assert "Traceback" not in result.output
