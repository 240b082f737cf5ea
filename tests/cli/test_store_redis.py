"""The engine commands on a shared Redis store (``--store``, ``BACKSTAY_STORE``,
``store:``): a batch recorded from one state directory is seen, resumed and reported
from another, as from another machine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import redis
from tests.cli.support import four_outcome_batch, invoke, write_suite
from tests.redis_server import free_port

from backstay.cli._state import ALL_SUCCEEDED, SOME_WAITING
from backstay.store.location import STORE_ENV_VAR, StoreLocation
from backstay.store.redis import RedisConnection, RedisTaskStore


@pytest.fixture(autouse=True)
def _no_stray_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BACKSTAY_CONFIG", raising=False)
    monkeypatch.delenv(STORE_ENV_VAR, raising=False)


def _url(location: StoreLocation) -> str:
    assert location.url is not None
    return location.url


def _states(result_stdout: str) -> dict[str, str]:
    return {task["run"]: task["state"] for task in json.loads(result_stdout)["tasks"]}


def test_status_from_another_directory_sees_the_batch_recorded_in_redis(
    tmp_path: Path, redis_location: StoreLocation
) -> None:
    suite = write_suite(tmp_path, ["a", "b"])
    result = invoke("batch", suite, "--state-dir", "machine-a", "--store", _url(redis_location))
    assert result.exit_code == ALL_SUCCEEDED, result.output
    assert not (tmp_path / "machine-a" / "state.sqlite").exists()
    shown = invoke("status", "--state-dir", "machine-b", "--store", _url(redis_location), "--json")
    assert shown.exit_code == 0, shown.output
    assert _states(shown.stdout) == {"a/T0-run_01": "succeeded", "b/T0-run_01": "succeeded"}


def test_a_batch_on_a_redis_cluster_is_seen_and_reported_from_another_directory(
    tmp_path: Path, cluster_location: StoreLocation
) -> None:
    ids = ["a", "b", "c", "d", "e"]
    store = _url(cluster_location)
    assert "cluster=yes" in store
    result = invoke("batch", write_suite(tmp_path, ids), "--state-dir", "m1", "--store", store)
    assert result.exit_code == ALL_SUCCEEDED, result.output
    shown = invoke("status", "--state-dir", "m2", "--store", store, "--json")
    assert shown.exit_code == 0, shown.output
    assert _states(shown.stdout) == {f"{task}/T0-run_01": "succeeded" for task in ids}
    report = invoke("report", "--state-dir", "m2", "--store", store, "-o", tmp_path / "r.html")
    assert report.exit_code == 0, report.output
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert all(f"{task}/T0-run_01" in html for task in ids)
    assert not (tmp_path / "m1" / "state.sqlite").exists()


def test_escalations_and_the_report_read_the_shared_store(
    tmp_path: Path, redis_location: StoreLocation, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(STORE_ENV_VAR, _url(redis_location))
    result, _ = four_outcome_batch(tmp_path)
    assert result.exit_code == SOME_WAITING, result.output
    listed = invoke("escalations", "list", "--state-dir", "elsewhere", "--json")
    assert listed.exit_code == 0, listed.output
    assert "blocked" in [item["task_id"] for item in json.loads(listed.stdout)]
    report = invoke("report", "--state-dir", "elsewhere", "--output", tmp_path / "r.html")
    assert report.exit_code == 0, report.output
    assert "blocked" in (tmp_path / "r.html").read_text(encoding="utf-8")


def test_a_resolved_escalation_is_resumed_from_another_directory(
    tmp_path: Path, redis_location: StoreLocation, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(STORE_ENV_VAR, _url(redis_location))
    four_outcome_batch(tmp_path)
    listed = json.loads(invoke("escalations", "list", "--state-dir", "b", "--json").stdout)
    (item,) = [found for found in listed if found["task_id"] == "blocked"]
    resolved = invoke(
        "escalations", "resolve", str(item["escalation_id"]), "--action", "retry",
        "--state-dir", "b",
    )  # fmt: skip
    assert resolved.exit_code == 0, resolved.output
    resumed = invoke("resume", "--state-dir", "b")
    assert resumed.exit_code == SOME_WAITING, resumed.output
    shown = invoke("status", "--state-dir", "c", "--json")
    assert _states(shown.stdout)["blocked/T0-run_01"] == "succeeded"


def test_store_in_the_config_file_is_used(tmp_path: Path, redis_location: StoreLocation) -> None:
    (tmp_path / "backstay.yaml").write_text(f"store: {_url(redis_location)}\n", encoding="utf-8")
    result = invoke("batch", write_suite(tmp_path, ["a"]), "--state-dir", "s")
    assert result.exit_code == ALL_SUCCEEDED, result.output
    assert not (tmp_path / "s" / "state.sqlite").exists()
    assert invoke("status", "--state-dir", "other").exit_code == 0


def test_status_of_an_empty_namespace_says_no_batch_is_there(
    tmp_path: Path, redis_location: StoreLocation
) -> None:
    result = invoke("status", "--state-dir", "s", "--store", _url(redis_location))
    assert result.exit_code == 2
    assert "holds no batch" in result.output
    assert "Traceback" not in result.output


def test_an_unreachable_redis_is_a_usage_error_without_the_password(tmp_path: Path) -> None:
    url = f"redis://user:canary-pass-0xdeadbeef@127.0.0.1:{free_port()}/0"
    result = invoke("batch", write_suite(tmp_path, ["a"]), "--state-dir", "s", "--store", url)
    assert result.exit_code == 2, result.output
    assert "cannot reach Redis at redis://user:***@127.0.0.1" in result.output
    assert "canary-pass" not in result.output
    assert not (tmp_path / "mock").exists()


def test_an_unknown_store_scheme_is_a_usage_error(tmp_path: Path) -> None:
    result = invoke("status", "--state-dir", "s", "--store", "postgres://db/1")
    assert result.exit_code == 2
    assert "unknown store scheme 'postgres'" in result.output


def test_no_secret_reaches_redis(
    tmp_path: Path, redis_location: StoreLocation, monkeypatch: pytest.MonkeyPatch
) -> None:
    canary = "sk-ant-api03-RedisCanary0123456789abcdefABCDEF"
    monkeypatch.setenv("ANTHROPIC_API_KEY", canary)
    monkeypatch.setenv(STORE_ENV_VAR, _url(redis_location))
    scenario = [[{"error": "content_filter", "message": f"leaked {canary}"}]]
    suite = write_suite(tmp_path, ["a"], scenario=scenario)
    result = invoke("batch", suite, "--state-dir", "s")
    assert canary not in result.output
    conn = RedisConnection(redis_location)
    try:
        (attempt,) = RedisTaskStore(conn).attempts()
    finally:
        conn.close()
    assert attempt.failure is not None
    assert attempt.failure.message == "leaked [REDACTED]"  # recorded, the key redacted
    client = redis.Redis.from_url(_url(redis_location).split("?")[0])
    try:
        keys = list(client.scan_iter(f"{{{redis_location.namespace}:*"))
        assert keys
        dumped = b"".join(client.dump(key) or b"" for key in keys)
    finally:
        client.close()
    assert canary.encode() not in dumped


def test_set_names_the_store_for_the_commands_that_read_a_batch(
    tmp_path: Path, redis_location: StoreLocation
) -> None:
    suite = write_suite(tmp_path, ["a"])
    result = invoke("batch", suite, "--state-dir", "machine-a", "--store", _url(redis_location))
    assert result.exit_code == ALL_SUCCEEDED, result.output
    store = f"store={_url(redis_location)}"
    shown = invoke("status", "--state-dir", "machine-b", "--set", store, "--json")
    assert shown.exit_code == 0, shown.output
    assert _states(shown.stdout) == {"a/T0-run_01": "succeeded"}
    listed = invoke("escalations", "list", "--state-dir", "machine-b", "--set", store, "--json")
    assert (listed.exit_code, json.loads(listed.stdout)) == (0, []), listed.output
    report = invoke("report", "--state-dir", "machine-b", "--set", store, "-o", tmp_path / "r.html")
    assert report.exit_code == 0, report.output
    assert "a/T0-run_01" in (tmp_path / "r.html").read_text(encoding="utf-8")


def test_a_bad_set_on_status_exits_2_naming_the_key(tmp_path: Path) -> None:
    result = invoke("status", "--state-dir", "s", "--set", "no_such_section.key=1")
    assert result.exit_code == 2, result.output
    assert "no_such_section" in result.output
    assert "Traceback" not in result.output


def test_batch_never_starts_a_second_batch_in_a_namespace_that_holds_one(
    tmp_path: Path, redis_location: StoreLocation
) -> None:
    suite = write_suite(tmp_path, ["a", "b"])
    url = _url(redis_location)
    first = invoke("batch", suite, "--state-dir", "machine-a", "--store", url)
    assert first.exit_code == ALL_SUCCEEDED, first.output
    starts = sorted(p.stat().st_size for p in (tmp_path / "mock").glob("*.attempts"))
    (tmp_path / "machine-a" / "batch.json").unlink()
    for state_dir in ("machine-a", "machine-b"):  # batch.json deleted; another directory
        again = invoke("batch", suite, "--state-dir", state_dir, "--store", url)
        assert again.exit_code == 2, again.output
        assert "would start a second batch" in again.output
        assert "backstay resume --store" in again.output
        assert "Traceback" not in again.output
    assert sorted(p.stat().st_size for p in (tmp_path / "mock").glob("*.attempts")) == starts
    assert not (tmp_path / "machine-b" / "batch.json").exists()


def test_batch_refuses_a_state_dir_whose_redis_records_are_gone(
    tmp_path: Path, redis_location: StoreLocation
) -> None:
    suite = write_suite(tmp_path, ["a"])
    url = _url(redis_location)
    first = invoke("batch", suite, "--state-dir", "state", "--store", url)
    assert first.exit_code == ALL_SUCCEEDED, first.output
    conn = redis.Redis.from_url(url.split("?")[0])
    try:
        namespace = redis_location.namespace
        for key in conn.scan_iter(match=f"*{namespace}*"):
            conn.delete(key)
    finally:
        conn.close()
    again = invoke("batch", suite, "--state-dir", "state", "--store", url)
    assert again.exit_code == 2, again.output
    assert "its records are gone" in again.output
