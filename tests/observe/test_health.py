"""``health_check``: the store takes writes, open circuits and escalations warn."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.observe.support import finished_batch, log_circuit

from backstay.engine.circuit_log import CircuitChange
from backstay.errors import ConfigError
from backstay.observe.health import check_writable, health_check, health_of
from backstay.observe.snapshot import read_state
from backstay.store.sqlite.tasks import STATE_FILE


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return finished_batch(tmp_path_factory.mktemp("batch"))


def test_open_escalations_warn(state: Path) -> None:
    report = health_check(state)
    assert report.status == "warn"
    assert report.http_status == 200
    (escalations,) = report.checks["escalations:open"]
    assert escalations["observedValue"] == 2
    assert report.checks["store:writable"][0]["status"] == "pass"


def test_an_open_circuit_is_named(tmp_path: Path) -> None:
    state = finished_batch(tmp_path)
    log_circuit(state, "mock/mock-model", CircuitChange.OPENED)
    log_circuit(state, "mock/fine", CircuitChange.OPENED, CircuitChange.CLOSED)
    (circuit,) = health_check(state).checks["circuits:open"]
    assert circuit == {**circuit, "componentId": "mock/mock-model", "status": "warn"}
    assert circuit["observedValue"] == "open"


def test_a_state_file_that_takes_no_write_fails(state: Path, tmp_path: Path) -> None:
    (tmp_path / STATE_FILE).write_bytes(b"this is no SQLite database" * 100)
    store = check_writable(tmp_path)
    report = health_of(read_state(state), store=store)
    assert store["status"] == "fail"
    assert "takes no write" in store["output"]
    assert report.status == "fail"
    assert report.http_status == 503


def test_the_report_is_health_json(state: Path) -> None:
    data = health_check(state).to_dict()
    assert set(data) >= {"status", "version", "checks"}
    assert all(isinstance(found, list) for found in data["checks"].values())


def test_a_directory_without_a_batch_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no batch ran there"):
        health_check(tmp_path)
