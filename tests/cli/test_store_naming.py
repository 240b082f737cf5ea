"""One way to name a batch: ``--store`` (or ``BACKSTAY_STORE``) on every command that
reads one, the store kept in ``batch.json`` without its password so that ``--state-dir``
alone finds it, hints that name the flags actually needed, and ``BACKSTAY_STATE_DIR``.
Through a real redis-server."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest
import redis
from tests.cli.support import DONE, invoke, write_suite
from tests.redis_server import RedisServer, start_redis

from backstay.cli._errors import USAGE_ERROR
from backstay.cli._state import ALL_SUCCEEDED, SOME_FAILED
from backstay.store.location import STORE_ENV_VAR, StoreLocation

CANARY: Final = "canary-pass-0xfeedface"
FAILS_ONCE: Final = [[{"error": "context_overflow"}], DONE]
# Every command that reads a batch, as typed before its flags.
READERS: Final = (
    ("status",),
    ("events",),
    ("serve",),
    ("health",),
    ("report",),
    ("resume",),
    ("retry",),
    ("cancel",),
    ("escalations", "list"),
    ("escalations", "show"),
    ("escalations", "resolve"),
)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BACKSTAY_CONFIG", raising=False)
    monkeypatch.delenv(STORE_ENV_VAR, raising=False)
    monkeypatch.delenv("BACKSTAY_STATE_DIR", raising=False)


@pytest.fixture
def guarded() -> Iterator[RedisServer]:
    """A redis-server of its own that asks for a password."""
    server = start_redis()
    client = redis.Redis(port=server.port)
    try:
        client.config_set("requirepass", CANARY)
        yield server
    finally:
        client.close()
        server.stop()


def _url(location: StoreLocation) -> str:
    assert location.url is not None
    return location.url


def _failed_batch(tmp_path: Path, store: str) -> str:
    suite = write_suite(tmp_path, ["ok", "bad"], scenarios={"bad": FAILS_ONCE})
    result = invoke("batch", suite, "--state-dir", "s", "--store", store)
    assert result.exit_code == SOME_FAILED, result.output
    return result.output


def test_state_dir_alone_finds_a_batch_recorded_in_redis(
    tmp_path: Path, redis_location: StoreLocation
) -> None:
    _failed_batch(tmp_path, _url(redis_location))
    kept = json.loads((tmp_path / "s" / "batch.json").read_text(encoding="utf-8"))
    assert kept["store"] == redis_location.display
    assert not (tmp_path / "s" / "state.sqlite").exists()
    for args in (
        ("status",),
        ("report",),
        ("health",),
        ("escalations", "list"),
        ("events", "--task", "bad"),
    ):
        result = invoke(*args, "--state-dir", "s")
        assert result.exit_code == 0, (args, result.output)
    shown = json.loads(invoke("health", "--state-dir", "s", "--json").stdout)
    assert shown["checks"]["store:reachable"][0]["componentId"] == redis_location.display


def test_the_retry_hint_after_a_redis_batch_runs_as_printed(
    tmp_path: Path, redis_location: StoreLocation
) -> None:
    output = _failed_batch(tmp_path, _url(redis_location))
    found = re.search(r"backstay retry TASK\.\.\. (--state-dir \S+)", output)
    assert found is not None, output
    retried = invoke("retry", "bad", *shlex.split(found.group(1)))
    assert retried.exit_code == 0, retried.output
    resumed = invoke("resume", "--state-dir", "s")
    assert resumed.exit_code == ALL_SUCCEEDED, resumed.output


def test_a_store_password_is_never_kept_and_asked_for_again(
    tmp_path: Path, guarded: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"redis://:{CANARY}@127.0.0.1:{guarded.port}/0?namespace=naming"
    output = _failed_batch(tmp_path, url)
    assert CANARY not in output
    batch_file = (tmp_path / "s" / "batch.json").read_text(encoding="utf-8")
    assert CANARY not in batch_file
    masked = f"redis://:***@127.0.0.1:{guarded.port}/0?namespace=naming"
    assert json.loads(batch_file)["store"] == masked
    assert f"--store '{masked}' (or --state failed)" in output  # the hints name the store
    refused = invoke("status", "--state-dir", "s")
    assert refused.exit_code == USAGE_ERROR, refused.output
    assert f"give the URL with it (--store URL, or ${STORE_ENV_VAR})" in refused.output
    assert "Traceback" not in refused.output
    monkeypatch.setenv(STORE_ENV_VAR, url)
    assert invoke("status", "--state-dir", "s").exit_code == 0


def test_every_command_that_reads_a_batch_takes_store(tmp_path: Path) -> None:
    for command in READERS:
        shown = invoke(*command, "--help")
        assert shown.exit_code == 0, shown.output
        assert "--store" in shown.output, command
        assert "--state-dir" in shown.output, command


def test_state_dir_comes_from_backstay_state_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = write_suite(tmp_path, ["a"])
    monkeypatch.setenv("BACKSTAY_STATE_DIR", str(tmp_path / "from-env"))
    assert invoke("batch", suite).exit_code == ALL_SUCCEEDED
    assert (tmp_path / "from-env" / "batch.json").is_file()
    shown = invoke("status", "--json")
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["state_dir"] == str(tmp_path / "from-env")


def test_events_of_a_task_the_batch_does_not_have_is_an_error(tmp_path: Path) -> None:
    assert invoke("batch", write_suite(tmp_path, ["a"]), "--state-dir", "s").exit_code == 0
    refused = invoke("events", "--state-dir", "s", "--task", "nope")
    assert refused.exit_code == USAGE_ERROR
    assert "--task: no task of the batch is 'nope' (its task ids: a)" in refused.output
    assert invoke("events", "--state-dir", "s", "--task", "a").exit_code == 0
