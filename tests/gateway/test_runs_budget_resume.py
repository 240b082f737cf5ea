"""After a budget pause, ``backstay resume`` continues the agent CLI's session.

End to end, in a private network namespace: ``backstay batch`` of the real agent CLI
through the fake provider's scripted session, with a batch token budget of half what the
whole session uses: the gateway refuses a request part way, the attempt fails
``ERR_LIMIT_BUDGET`` and the task is paused (exit code 5). ``backstay resume`` with a
larger budget then continues the CLI's own session (Claude Code ``--resume``, Codex
``exec resume``: ``attempt_start`` ``resumed_session`` in the attempt's ``metrics.json``)
in the workspace as the session left it, instead of restoring the workspace and paying
for the answered turns again: the task succeeds, the workspace file has each step once,
and the provider's request log has each turn of the session once, in order (the continued
session's first request carries the answered turns; none is asked again from the prompt).

The decision itself: ``tests/adapters/cli/test_attempt_start.py``. Claude Code runs in
``make test``; Codex is ``slow``. Skipped, with the reason, when the CLI is not installed
(``make agents``) or no namespace can be made here.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import pytest
import yaml
from tests.adapters.cli_provider import BACKSTAY, BASE_ENV, Providers, Served, installed
from tests.adapters.support import CANARY_KEY
from tests.gateway.test_runs_budget import (
    TIMEOUT_S,
    TURNS,
    _session,
    _stopped_part_way,
    providers,
    session_tokens,
)

from backstay.adapters.cli.attempt_start import SESSION_HOME_DIR, SNAPSHOT_DIR
from backstay.adapters.session import read_session_record
from backstay.engine.records import AttemptOutcome
from backstay.engine.states import TaskState
from backstay.events import EVENTS_FILE
from backstay.store.sqlite.tasks import SQLiteTaskStore

__all__ = ["providers", "session_tokens"]  # the fixtures, shared with test_runs_budget

STEPS: Final = [f"step-{i}" for i in range(1, TURNS + 1)]
RAISED_TOKENS: Final = 10_000_000


@dataclasses.dataclass(frozen=True, kw_only=True)
class Cli:
    """An agent CLI as the batch runs it: adapter, model, the variables exported
    (``{url}`` is the fake provider's)."""

    adapter: str
    model: str
    exported: Mapping[str, str]


CLAUDE_CODE: Final = Cli(
    adapter="claude-code",
    model="claude-sonnet-4-5",
    exported={"ANTHROPIC_API_KEY": CANARY_KEY, "ANTHROPIC_BASE_URL": "{url}"},
)
CODEX: Final = Cli(
    adapter="codex",
    model="gpt-5.4",
    exported={"OPENAI_API_KEY": CANARY_KEY, "OPENAI_BASE_URL": "{url}/v1"},
)


def _env(cli: Cli, served: Served) -> dict[str, str]:
    exported = {name: value.format(url=served.url) for name, value in cli.exported.items()}
    return {**BASE_ENV, "HOME": os.environ.get("HOME", "/root"), **exported}


def _suite(tmp_path: Path, cli: Cli) -> str:
    task = {
        "id": "session",
        "adapter": cli.adapter,
        "model": cli.model,
        "timeout_s": TIMEOUT_S,
        "prompt": "Run the five steps, one command at a time.",
    }
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump({"suite": "budgeted", "tasks": [task]}), encoding="utf-8")
    return str(path)


def _run(providers: Providers, cli: Cli, served: Served, tmp_path: Path, *argv: str) -> Any:
    return providers.namespace.run(
        [*BACKSTAY, *argv], timeout_s=TIMEOUT_S + 120, env=_env(cli, served), cwd=tmp_path
    )


@pytest.fixture(scope="module")
def codex_session_tokens(providers: Providers, tmp_path_factory: pytest.TempPathFactory) -> int:
    """The tokens one whole Codex session uses, without a budget in the way."""
    installed("codex")
    served = providers.serve(_session())
    tmp_path = tmp_path_factory.mktemp("codex-free")
    state = str(tmp_path / "state")
    done = _run(
        providers, CODEX, served, tmp_path, "batch", _suite(tmp_path, CODEX), "--state-dir", state
    )
    stats = served.stats()
    assert done.returncode == 0, done.stderr
    assert stats["requests"] == TURNS + 1, stats
    whole: int = stats["input_tokens"] + stats["output_tokens"]
    return whole


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


def _paused_then_resumed(providers: Providers, tmp_path: Path, cli: Cli, whole: int) -> None:
    installed(cli.adapter)
    log = tmp_path / "requests.jsonl"
    served = providers.serve(_session(), log=log)
    state = str(tmp_path / "state")
    budget = str(whole // 2)
    suite = _suite(tmp_path, cli)
    paused = _run(
        providers,
        cli,
        served,
        tmp_path,
        "batch",
        suite,
        "--state-dir",
        state,
        "--budget-tokens",
        budget,
    )
    assert paused.returncode == 5, paused.stderr
    first = served.stats()
    _stopped_part_way(first, whole)
    answered = first["requests"]
    (workspace,) = (tmp_path / "state").glob("runs/session/*/run_01/workspace")
    assert (workspace / "progress.txt").read_text().splitlines() == STEPS[:answered]
    done = _run(
        providers,
        cli,
        served,
        tmp_path,
        "resume",
        "--state-dir",
        state,
        "--budget-tokens",
        str(RAISED_TOKENS),
    )
    stats = served.stats()
    assert done.returncode == 0, done.stderr
    with SQLiteTaskStore(tmp_path / "state") as store:
        (task,) = store.tasks()
        attempts = sorted(store.attempts(), key=lambda a: a.number)
    assert task.state is TaskState.SUCCEEDED, task
    assert [a.outcome for a in attempts] == [AttemptOutcome.FAILED, AttemptOutcome.SUCCEEDED]
    assert attempts[0].failure is not None
    assert attempts[0].failure.code == "ERR_LIMIT_BUDGET"
    stopped, resumed = (Path(a.output_dir) for a in attempts)
    metrics = json.loads((resumed / "metrics.json").read_text())
    assert metrics["attempt_start"] == "resumed_session", metrics
    before, after = read_session_record(stopped), read_session_record(resumed)
    assert before is not None
    assert after is not None
    assert before.turns == answered, before
    assert after.resumed, after
    assert after.session_id == before.session_id, (before, after)
    # Each step once, and each turn of the session asked of the provider once, in order:
    # the continued session's first request carried the answered turns (its turn is the
    # next one); none was asked again from the prompt.
    assert (workspace / "progress.txt").read_text().splitlines() == STEPS
    assert stats["requests"] == TURNS + 1, stats
    assert stats["by_status"] == {"200": TURNS + 1}, stats
    assert _logged_turns(log, TURNS + 1) == list(range(1, TURNS + 2))
    events = (tmp_path / "state" / EVENTS_FILE).read_text().splitlines()
    names = [json.loads(line)["event"] for line in events]
    assert names.count("attempt.resumed_session") == 1, names
    assert "attempt.workspace_restored" not in names, names
    # The task succeeded: its snapshot and the CLI's kept home are gone.
    assert not (workspace.parent / SNAPSHOT_DIR).exists()
    assert not (workspace.parent / SESSION_HOME_DIR).exists()
    assert CANARY_KEY not in paused.stdout + paused.stderr + done.stdout + done.stderr


def test_claude_code_continues_its_session_after_a_budget_pause_and_a_resume(
    providers: Providers, tmp_path: Path, session_tokens: int
) -> None:
    _paused_then_resumed(providers, tmp_path, CLAUDE_CODE, session_tokens)


@pytest.mark.slow
def test_codex_continues_its_session_after_a_budget_pause_and_a_resume(
    providers: Providers, tmp_path: Path, codex_session_tokens: int
) -> None:
    _paused_then_resumed(providers, tmp_path, CODEX, codex_session_tokens)
