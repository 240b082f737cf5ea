"""Gemini CLI continues its session when its run goes through the gateway, and only then:
``backstay run`` inside a private network namespace, nothing but the standard exported
variables, the real Gemini CLI running the fake provider's scripted three-turn session
whose turn 2 is refused with a 503 whose ``retry-after`` is longer than the gateway waits.

Through the gateway (the default), the gateway hands the 503 on at once and the CLI's
session ends after step 1. The run's second attempt continues that session
(``gemini --resume <id>``, ``continue`` on stdin) with a run token of its own; the
resumed CLI answers its turn-1 call twice, the gateway drops the repeated result
(``request.repaired``) and the provider, which refuses the defect as Gemini does, answers
turn 2 and then turn 3 once each: the run succeeds, each step is in the workspace file
once, and the real key is in no file the run left.

The same through ``backstay batch``: the second attempt's ``metrics.json`` has
``attempt_start`` ``resumed_session``, the batch's ``events.jsonl`` has
``attempt.resumed_session`` and a ``request.repaired`` of the task for each request of
the continued session (its history keeps the repeated result), and the provider's
request log has turns 1, 2 (the 503), 2, 3 and the final answer, in that order.

With ``--no-gateway`` the CLI talks to the provider straight, where a resumed session
would be refused: the second attempt starts afresh in the workspace restored from the
snapshot, and the provider sees turn 1 twice, each step still once in the file.

Two CLI starts each: the ``backstay run`` through the gateway runs in ``make test``, the
batch and ``--no-gateway`` are ``slow``. Skipped, with the reason, when Gemini CLI is not
installed (``make agents``) or no namespace can be made here.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest
import yaml
from tests.adapters.cli_provider import (
    BACKSTAY,
    BASE_ENV,
    Providers,
    installed,
    namespace_providers,
)
from tests.adapters.support import CANARY_KEY

from backstay.adapters.cli.attempt_start import SESSION_HOME_DIR, SNAPSHOT_DIR
from backstay.adapters.session import read_session_record
from backstay.engine.records import AttemptOutcome
from backstay.engine.states import TaskState
from backstay.events import EVENTS_FILE
from backstay.gateway import GATEWAY_POLICY
from backstay.store.sqlite.tasks import SQLiteTaskStore

MODEL: Final = "gemini-2.5-flash"
TURNS: Final = 3
TIMEOUT_S: Final = 240.0
STEPS: Final = [f"step-{i}" for i in range(1, TURNS + 1)]
# Longer than the gateway waits for a retry: it gives up at the first 503.
SCENARIO: Final = {
    "session": {
        "turns": [{"shell": f"echo step-{i} >> progress.txt"} for i in range(1, TURNS + 1)],
        "final": "All three steps are done.",
    },
    "faults": [
        {"fault": "unavailable", "turn": 2, "retry_after_s": GATEWAY_POLICY.max_retry_after_s + 100}
    ],
}


@pytest.fixture(scope="module")
def providers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Providers]:
    yield from namespace_providers(tmp_path_factory)


@pytest.fixture(autouse=True)
def cli() -> None:
    installed("gemini-cli")


def _files_text(folder: Path) -> str:
    return "".join(
        p.read_text(encoding="utf-8", errors="replace") for p in folder.rglob("*") if p.is_file()
    )


def _env(served_url: str) -> dict[str, str]:
    return {
        **BASE_ENV,
        "HOME": os.environ.get("HOME", "/root"),
        "GEMINI_API_KEY": CANARY_KEY,
        "GOOGLE_GEMINI_BASE_URL": served_url,
    }


def _run(providers: Providers, tmp_path: Path, *flags: str) -> tuple[dict[str, Any], str, Path]:
    """``backstay run`` of the session, which must succeed; the provider's counts, the
    run's ``agent.log`` and its output folder."""
    served = providers.serve(SCENARIO)
    workspace, out = tmp_path / "workspace", tmp_path / "out"
    workspace.mkdir()
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Run the three steps, one command at a time.", encoding="utf-8")
    env = _env(served.url)
    argv = [*BACKSTAY, "run", "--adapter", "gemini-cli", "--model", MODEL]
    argv += ["--prompt-file", str(prompt), "--workspace", str(workspace)]
    argv += ["--output-dir", str(out), "--timeout", str(TIMEOUT_S), *flags]
    done = providers.namespace.run(argv, timeout_s=TIMEOUT_S * 2 + 60, env=env)
    log = (out / "agent.log").read_text() if (out / "agent.log").exists() else ""
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}\n{log}"
    assert log.count("started pid ") == 2, log
    assert "attempt 1 starts: fresh" in log, log
    assert "attempt_1 failed: server_error/" in log, log
    # Each step once: never a step redone, never one in a half-edited workspace.
    assert (workspace / "progress.txt").read_text().splitlines() == STEPS, log
    # The run succeeded: the snapshot and any kept home are gone.
    assert not (out / SNAPSHOT_DIR).exists()
    assert not (out / SESSION_HOME_DIR).exists()
    assert CANARY_KEY not in _files_text(out) + done.stdout + done.stderr
    return served.stats(), log, out


def test_gemini_cli_continues_its_session_through_the_gateway(
    providers: Providers, tmp_path: Path
) -> None:
    stats, log, out = _run(providers, tmp_path)
    assert log.count("through the gateway at http://127.0.0.1:") == 2, log
    assert "attempt 2 starts: resumed_session" in log, log
    record = read_session_record(out)
    assert record is not None, log
    assert record.session_id, record
    assert record.resumed, record
    assert f"--resume {record.session_id}" in log, log
    # Turn 1 answered once, turn 2 refused once then answered once (by the continued
    # session, its repeated result dropped: no 400), turn 3 and the final answer once.
    assert stats["by_turn"] == {"1": 1, "2": 2, "3": 1, "4": 1}, stats
    assert stats["by_status"] == {"200": 4, "503": 1}, stats
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["api_calls"] == stats["requests"], (metrics, stats)
    assert metrics["tokens_input"] == stats["input_tokens"], (metrics, stats)


@pytest.mark.slow
def test_gemini_cli_straight_to_its_provider_starts_afresh_in_the_restored_workspace(
    providers: Providers, tmp_path: Path
) -> None:
    stats, log, out = _run(providers, tmp_path, "--no-gateway")
    assert "through the gateway" not in log, log
    assert "attempt 2 starts: workspace_restored" in log, log
    record = read_session_record(out)
    assert record is None or not record.resumed, record
    # The rerun asked turn 1 again (the session started over), turn 2 once more.
    assert stats["by_turn"] == {"1": 2, "2": 2, "3": 1, "4": 1}, stats
    assert stats["by_status"] == {"200": 5, "503": 1}, stats


def _logged_turns(log: Path, count: int) -> list[int | None]:
    """The turns of the requests in the provider's request log ``log``, in order, once it
    holds ``count`` (it is written every half second: read for at most 10 s)."""
    deadline = time.monotonic() + 10.0
    lines: list[str] = []
    for _ in range(200):
        lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
        if len(lines) >= count or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    return [json.loads(line)["turn"] for line in lines]


@pytest.mark.slow
def test_a_batch_task_of_gemini_cli_continues_its_session_through_the_gateway(
    providers: Providers, tmp_path: Path
) -> None:
    log = tmp_path / "requests.jsonl"
    served = providers.serve(SCENARIO, log=log)
    task = {
        "id": "session",
        "adapter": "gemini-cli",
        "model": MODEL,
        "timeout_s": TIMEOUT_S,
        "prompt": "Run the three steps, one command at a time.",
    }
    suite = tmp_path / "suite.yaml"
    suite.write_text(yaml.safe_dump({"suite": "resumed", "tasks": [task]}), encoding="utf-8")
    state = tmp_path / "state"
    argv = [*BACKSTAY, "batch", str(suite), "--state-dir", str(state)]
    done = providers.namespace.run(
        argv, timeout_s=TIMEOUT_S * 2 + 60, env=_env(served.url), cwd=tmp_path
    )
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    with SQLiteTaskStore(state) as store:
        (stored,) = store.tasks()
        attempts = sorted(store.attempts(), key=lambda a: a.number)
    assert stored.state is TaskState.SUCCEEDED, stored
    assert [a.outcome for a in attempts] == [AttemptOutcome.FAILED, AttemptOutcome.SUCCEEDED]
    first, second = (Path(a.output_dir) for a in attempts)
    metrics = json.loads((second / "metrics.json").read_text())
    assert metrics["attempt_start"] == "resumed_session", metrics
    before, after = read_session_record(first), read_session_record(second)
    assert before is not None
    assert after is not None
    assert after.resumed, after
    assert after.session_id == before.session_id, (before, after)
    (workspace,) = state.glob("runs/session/*/run_01/workspace")
    assert (workspace / "progress.txt").read_text().splitlines() == STEPS
    # Turn 2 refused once, then each turn asked once, in order: the continued session's
    # first request carried turn 1 (its result once, the repeat dropped).
    assert _logged_turns(log, 5) == [1, 2, 2, 3, 4]
    events = [json.loads(line) for line in (state / EVENTS_FILE).read_text().splitlines()]
    names = [event["event"] for event in events]
    assert names.count("attempt.resumed_session") == 1, names
    assert "attempt.workspace_restored" not in names, names
    # Each request of the continued session carries the repeated result (its history
    # keeps it): each is repaired, turns 2 and 3 and the final answer.
    repaired = [event for event in events if event["event"] == "request.repaired"]
    assert len(repaired) == 3, repaired
    for event in repaired:
        assert event["dropped"] == 1, event
        assert event["task"] == stored.operation_id, event
        assert event["attempt"] == attempts[1].attempt_id, event
    assert CANARY_KEY not in done.stdout + done.stderr + json.dumps(events)
