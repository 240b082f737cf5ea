"""Parallel agent sessions under a provider limit below their demand: one ``backstay batch``
of real agent CLI sessions (each a scripted four-turn session of the fake provider, in a
workspace of its own), started inside a private network namespace with nothing but the
standard exported variables (``ANTHROPIC_API_KEY`` and ``ANTHROPIC_BASE_URL`` for Claude
Code, ``OPENAI_…`` for Codex, ``GEMINI_API_KEY`` and ``GOOGLE_GEMINI_BASE_URL`` for Gemini
CLI, pointing at the fake provider), against a provider enforcing
``rate_limit.requests_per_minute`` below what the sessions ask for together.

Every task succeeds with one attempt (the CLI started once, its ``agent.log`` saying one
attempt), at most 5 % of the requests the provider answered are 429s, each workspace file
has each step once, and the canary key is in no output, file or record of the batch.

Gemini's answers carry no rate-limit headers, so its limit is the one the configuration
gives (``retry.rate_limits`` of the batch's ``backstay.yaml``, which the gateway the batch
starts paces at); the gateway learns the others' from their answers.

Six Claude Code sessions at once run in ``make test``; six Codex and six Gemini CLI
sessions, and twelve Claude Code ones six at a time, are slow (``make test-all``).
Skipped, with the reason, when the CLI is not installed (``make agents``) or no namespace
can be made here.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final

import pytest
import yaml
from tests.adapters.cli_provider import (
    BACKSTAY,
    BASE_ENV,
    Providers,
    Served,
    installed,
    namespace_providers,
)
from tests.adapters.support import CANARY_KEY

from backstay.engine.records import AttemptRecord, TaskRecord
from backstay.engine.states import TaskState
from backstay.store.sqlite.tasks import SQLiteTaskStore

TURNS: Final = 4
MODEL: Final = "claude-sonnet-4-5"  # the drain's (the provider's limit is one for all)
TIMEOUT_S: Final = 240.0
BATCH_TIMEOUT_S: Final = 420.0
FINAL: Final = "All four steps are done."
MAX_429_SHARE: Final = 0.05
DRAIN_LIMIT: Final = 2_000
# Run inside the namespace: requests (outside any session) until the provider's first 429.
DRAIN_SCRIPT: Final = """
import json, sys, urllib.error, urllib.request
body = json.dumps({"model": sys.argv[2], "max_tokens": 8,
                   "messages": [{"role": "user", "content": "hi"}]}).encode()
headers = {"content-type": "application/json", "anthropic-version": "2023-06-01"}
for sent in range(1, int(sys.argv[3]) + 1):
    request = urllib.request.Request(sys.argv[1] + "/v1/messages", body, headers)
    try:
        urllib.request.urlopen(request, timeout=10).read()
    except urllib.error.HTTPError as err:
        if err.code == 429:
            print(sent)
            break
"""


def _scenario(requests_per_minute: int) -> dict[str, Any]:
    return {
        "session": {
            "turns": [{"shell": f"echo step-{i} >> progress.txt"} for i in range(1, TURNS + 1)],
            "final": FINAL,
        },
        "rate_limit": {"requests_per_minute": requests_per_minute},
    }


@dataclasses.dataclass(frozen=True, kw_only=True)
class Agent:
    """An agent CLI as a batch runs it: its adapter and model, the variables exported
    (``{url}`` is the fake provider's), and the ``backstay.yaml`` the batch reads."""

    adapter: str
    model: str
    exported: Mapping[str, str]
    config: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    drain: bool = True


CLAUDE_CODE: Final = Agent(
    adapter="claude-code",
    model=MODEL,
    exported={"ANTHROPIC_API_KEY": CANARY_KEY, "ANTHROPIC_BASE_URL": "{url}"},
)
CODEX: Final = Agent(
    adapter="codex",
    model="gpt-5.4",
    exported={"OPENAI_API_KEY": CANARY_KEY, "OPENAI_BASE_URL": "{url}/v1"},
)


def _gemini(requests_per_minute: int) -> Agent:
    """Gemini CLI, with the limit known from the configuration only (10 % under the
    provider's): its bucket starts full, as the provider's, which is therefore not drained."""
    configured = int(requests_per_minute * 0.9)
    return Agent(
        adapter="gemini-cli",
        model="gemini-2.5-flash",
        exported={"GEMINI_API_KEY": CANARY_KEY, "GOOGLE_GEMINI_BASE_URL": "{url}"},
        config={"retry": {"rate_limits": {"gemini": {"requests_per_minute": configured}}}},
        drain=False,
    )


@pytest.fixture(scope="module")
def providers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Providers]:
    yield from namespace_providers(tmp_path_factory)


def _suite(tmp_path: Path, sessions: int, agent: Agent) -> Path:
    suite = {
        "suite": "sessions",
        "defaults": {"adapter": agent.adapter, "model": agent.model, "timeout_s": TIMEOUT_S},
        "tasks": [
            {"id": f"session-{i}", "prompt": "Run the four steps, one command at a time."}
            for i in range(1, sessions + 1)
        ],
    }
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    if agent.config:  # the batch runs in tmp_path: its backstay.yaml
        config = yaml.safe_dump(dict(agent.config), sort_keys=False)
        (tmp_path / "backstay.yaml").write_text(config, encoding="utf-8")
    return path


def _drain(providers: Providers, served: Served) -> None:
    """Use the provider's bucket up, so that the batch meets its limit from its first
    request rather than after a minute's worth."""
    argv = [sys.executable, "-I", "-c", DRAIN_SCRIPT, served.url, MODEL, str(DRAIN_LIMIT)]
    done = providers.namespace.run(argv, timeout_s=120)
    assert done.stdout.strip(), f"no 429 after {DRAIN_LIMIT} requests: {done.stderr}"


def _bytes_in(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file())


def _records(state: Path) -> tuple[tuple[TaskRecord, ...], tuple[AttemptRecord, ...]]:
    with SQLiteTaskStore(state) as store:
        return store.tasks(), store.attempts()


def _batch(
    providers: Providers,
    tmp_path: Path,
    *,
    sessions: int,
    concurrency: int,
    requests_per_minute: int,
    agent: Agent = CLAUDE_CODE,
) -> None:
    installed(agent.adapter)
    served = providers.serve(_scenario(requests_per_minute))
    if agent.drain:
        _drain(providers, served)
    before = served.stats()
    suite, state = _suite(tmp_path, sessions, agent), tmp_path / "state"
    env = {
        **BASE_ENV,
        "HOME": os.environ.get("HOME", "/root"),
        **{name: value.replace("{url}", served.url) for name, value in agent.exported.items()},
    }
    argv = [
        *BACKSTAY, "batch", str(suite), "--state-dir", str(state),
        "--concurrency", str(concurrency),
    ]  # fmt: skip
    started = time.monotonic()
    done = providers.namespace.run(argv, timeout_s=BATCH_TIMEOUT_S, env=env, cwd=tmp_path)
    elapsed_s = time.monotonic() - started
    after = served.stats()
    # The batch's part of the provider's counters (the drain's requests had no turn).
    requests = after["requests"] - before["requests"]
    statuses = {
        code: count - before["by_status"].get(code, 0)
        for code, count in after["by_status"].items()
        if count > before["by_status"].get(code, 0)
    }
    refused = statuses.get("429", 0)
    tasks, attempts = _records(state)
    # The figures, for the record (``pytest -s`` shows them) and for every failure.
    succeeded = sum(t.state is TaskState.SUCCEEDED for t in tasks)
    figures = (
        f"{sessions} {agent.adapter} sessions at {requests_per_minute} requests/min: "
        f"{succeeded} succeeded, "
        f"{len(attempts)} CLI starts, {requests} requests, {refused} 429s "
        f"({refused / max(1, requests):.1%}), {elapsed_s:.1f} s; "
        f"by_turn {after['by_turn']}, by_status {statuses}"
    )
    print(f"\n{figures}")
    runs = state / "runs"
    logs = {str(p.relative_to(runs)): p.read_text() for p in runs.rglob("agent.log")}
    assert done.returncode == 0, f"{figures}\n{done.stderr}\n{done.stdout[-3000:]}"
    assert sorted(t.state for t in tasks) == [TaskState.SUCCEEDED] * sessions, figures
    # Each CLI started once: one attempt a task, one attempt in each run's log.
    assert len(attempts) == sessions, figures
    assert len(logs) == sessions, sorted(logs)
    for name, text in logs.items():
        assert text.count(": attempt ") == 1, f"{name}:\n{text}"
        assert "through the gateway at http://127.0.0.1:" in text, f"{name}:\n{text}"
    # The provider answered each turn of each session once (the refused requests aside),
    # and at most 5 % of what it saw was over its limit.
    assert sum(after["by_turn"].values()) - refused == sessions * (TURNS + 1), figures
    assert refused <= MAX_429_SHARE * requests, figures
    # Each workspace: each step once, in order.
    workspaces = sorted(runs.glob("*/*/*/workspace"))
    assert len(workspaces) == sessions, workspaces
    for workspace in workspaces:
        lines = (workspace / "progress.txt").read_text().splitlines()
        assert lines == [f"step-{i}" for i in range(1, TURNS + 1)], workspace
    # The key: in no output, file or record of the batch.
    assert CANARY_KEY not in done.stdout + done.stderr
    assert CANARY_KEY.encode() not in _bytes_in(state)


def test_six_claude_code_sessions_in_one_batch_keep_under_a_provider_limit_below_demand(
    providers: Providers, tmp_path: Path
) -> None:
    # 30 requests at 60 a minute from a used-up bucket; unpaced, they come in about 6 s.
    _batch(providers, tmp_path, sessions=6, concurrency=6, requests_per_minute=60)


@pytest.mark.slow
def test_six_codex_sessions_in_one_batch_keep_under_a_provider_limit_below_demand(
    providers: Providers, tmp_path: Path
) -> None:
    _batch(providers, tmp_path, sessions=6, concurrency=6, requests_per_minute=60, agent=CODEX)


@pytest.mark.slow
def test_six_gemini_cli_sessions_in_one_batch_keep_under_a_provider_limit_below_demand(
    providers: Providers, tmp_path: Path
) -> None:
    # Gemini's answers carry no rate-limit headers: the configured limit paces them. 30
    # requests against a bucket of 20 refilled at 20 a minute.
    agent = _gemini(requests_per_minute=20)
    _batch(providers, tmp_path, sessions=6, concurrency=6, requests_per_minute=20, agent=agent)


@pytest.mark.slow
def test_twelve_claude_code_sessions_six_at_a_time_keep_under_a_provider_limit(
    providers: Providers, tmp_path: Path
) -> None:
    # 60 requests at 60 a minute: the second six start where the first left the limit.
    _batch(providers, tmp_path, sessions=12, concurrency=6, requests_per_minute=60)
