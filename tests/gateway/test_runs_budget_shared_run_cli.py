"""End to end: ``backstay run --budget-tokens --gateway URL`` of the real Claude
Code, in a private network namespace, through a shared ``backstay gateway --agent-runs``
process without ``--store``, with a token budget of half what its session uses: the run is
registered with its budget, the gateway refuses the request with no room (never sent),
the session is stopped part way in its one CLI start, and the run exits 5 at its budget —
as through the gateway ``backstay run`` starts in process
(``tests/gateway/test_runs_budget.py``). With ``--store`` (``slow``), the same: the gateway
holds the run in a ledger of its own beside the store's. (The check of the same through the
anthropic SDK: ``test_runs_budget_shared_run.py``.)"""

from __future__ import annotations

import os
import selectors
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

import pytest
from tests.adapters.cli_provider import BACKSTAY, BASE_ENV, Providers
from tests.adapters.support import CANARY_KEY
from tests.gateway.test_runs_budget import (
    TIMEOUT_S,
    _session,
    _stopped_part_way,
    providers,
    session_tokens,
)

__all__ = ["providers", "session_tokens"]  # the fixtures, shared with test_runs_budget

GATEWAY_TOKEN: Final = "shared-gateway-budget-token-for-run-0123"
PORT: Final = 8794


@contextmanager
def _gateway(providers: Providers, store: Path | None) -> Iterator[list[str]]:
    """A ``backstay gateway --agent-runs`` process in the namespace (on ``store`` if
    given); yields the list its stderr is appended to once it is stopped."""
    stored = [] if store is None else ["--store", str(store)]
    gateway = providers.namespace.popen(
        [*BACKSTAY, "gateway", "--agent-runs", "--port", str(PORT), *stored],
        env={**BASE_ENV, "BACKSTAY_GATEWAY_TOKEN": GATEWAY_TOKEN},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    errors: list[str] = []
    try:
        assert gateway.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(gateway.stdout, selectors.EVENT_READ)
            assert selector.select(60.0), "the shared gateway did not start"
        assert "gateway listening" in gateway.stdout.readline()
        yield errors
    finally:
        gateway.terminate()
        _, stderr = gateway.communicate(timeout=30)
        errors.append(stderr)


def _run(providers: Providers, tmp_path: Path, tokens: int) -> tuple[Any, dict[str, Any], str]:
    """``backstay run`` of Claude Code through the shared gateway under ``tokens``: the
    finished process, the provider's stats, and the run's agent.log."""
    served = providers.serve(_session())
    workspace, out = tmp_path / "workspace", tmp_path / "out"
    workspace.mkdir()
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Run the five steps, one command at a time.", encoding="utf-8")
    env = {
        **BASE_ENV,
        "HOME": os.environ.get("HOME", "/root"),
        "ANTHROPIC_API_KEY": CANARY_KEY,
        "ANTHROPIC_BASE_URL": served.url,
        "BACKSTAY_GATEWAY_TOKEN": GATEWAY_TOKEN,
    }
    argv = [*BACKSTAY, "run", "--adapter", "claude-code", "--model", "claude-sonnet-4-5"]
    argv += ["--prompt-file", str(prompt), "--workspace", str(workspace)]
    argv += ["--output-dir", str(out), "--timeout", str(TIMEOUT_S), "--no-retry"]
    argv += ["--budget-tokens", str(tokens), "--gateway", f"http://127.0.0.1:{PORT}"]
    done = providers.namespace.run(argv, timeout_s=TIMEOUT_S + 60, env=env, cwd=tmp_path)
    log = (out / "agent.log").read_text() if (out / "agent.log").exists() else ""
    return done, served.stats(), log


def test_backstay_run_through_a_shared_gateway_stops_claude_code_at_its_token_budget(
    providers: Providers, tmp_path: Path, session_tokens: int
) -> None:
    with _gateway(providers, None) as gateway_err:
        done, stats, log = _run(providers, tmp_path, session_tokens // 2)
    assert done.returncode == 5, f"{done.stderr}\n{log}\n{gateway_err}"
    assert log.count("started pid ") == 1, log
    assert "stopped at its spending budget" in done.stderr, done.stderr
    assert "no room for the next request of attempt 1" in done.stderr, done.stderr
    # The refused request never reached the provider.
    _stopped_part_way(stats, session_tokens)
    assert CANARY_KEY not in done.stdout + done.stderr + "".join(gateway_err) + log


@pytest.mark.slow
def test_backstay_run_through_a_shared_gateway_on_a_store_is_stopped_at_its_budget_too(
    providers: Providers, tmp_path: Path, session_tokens: int
) -> None:
    # The gateway holds the run in its own ledger beside the store's (gateway-spend.sqlite).
    state = tmp_path / "state"
    state.mkdir()
    with _gateway(providers, state) as gateway_err:
        done, stats, log = _run(providers, tmp_path, session_tokens // 2)
    assert done.returncode == 5, f"{done.stderr}\n{log}\n{gateway_err}"
    assert "checked between attempts" not in done.stderr, done.stderr
    assert log.count("started pid ") == 1, log
    assert "no room for the next request of attempt 1" in done.stderr, done.stderr
    _stopped_part_way(stats, session_tokens)
    assert (state / "gateway-spend.sqlite").is_file()
    assert CANARY_KEY not in done.stdout + done.stderr + "".join(gateway_err) + log
