"""``observe.otel`` in the configuration file alone (no OTEL_* variable) makes
``backstay batch`` export its spans, and ``enabled: false`` stops an endpoint variable."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.cli.support import invoke, write_suite
from tests.observe.otlp_receiver import OtlpReceiver, attributes


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "backstay.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_configuration_file_switches_export_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_SDK_DISABLED", "OTEL_SERVICE_NAME"):
        monkeypatch.delenv(name, raising=False)
    suite = write_suite(tmp_path, ["one", "two"])
    with OtlpReceiver() as receiver:
        config = _config(
            tmp_path,
            f"observe:\n  otel:\n    enabled: true\n    endpoint: {receiver.url}\n"
            "    service_name: nightly-evals\n",
        )
        result = invoke("batch", suite, "--state-dir", tmp_path / "state", "--config", config)
        spans = receiver.spans()
        services = receiver.service_names()
    assert result.exit_code == 0, result.output
    tasks = {
        attributes(s)["backstay.task_id"]
        for s in spans
        if s.name.startswith("invoke_agent ")
        if "backstay.task_id" in attributes(s)
    }
    assert tasks == {"one", "two"}
    assert services == {"nightly-evals"}


def test_enabled_false_wins_over_an_endpoint_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = write_suite(tmp_path, ["one"])
    with OtlpReceiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
        config = _config(tmp_path, "observe:\n  otel:\n    enabled: false\n")
        result = invoke("batch", suite, "--state-dir", tmp_path / "state", "--config", config)
        spans = receiver.spans()
    assert result.exit_code == 0, result.output
    assert spans == []
