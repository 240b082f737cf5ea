"""Agent CLI runs on Ray workers go through a gateway of the worker's own: ``backstay batch
--executor ray`` started inside a private network namespace (a local Ray cluster started
for the batch, on the namespace's 127.0.0.1) with nothing but the standard exported
variables, running the real Claude Code through a scripted four-turn session whose turn 2
is refused with a 529 and turn 3 with a 429 and ``retry-after``.

The worker's gateway absorbs both: the run succeeds, the CLI starts once, the provider
sees each turn once plus the two refused requests, the workspace file has each line once,
metrics.json counts what the provider answered, ``events.jsonl`` has each retried request
once, and the real key is in no environment of the agent's processes, no file of the
batch and no output. The same through a shared gateway (``--gateway URL``, its token in
the workers' environment), and with ``--no-gateway`` straight to the provider, are
``slow``. Skipped, with the reason, when Claude Code is not installed (``make agents``)
or no namespace can be made here.
"""

from __future__ import annotations

import json
import os
import selectors
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest
import yaml
from tests.adapters.cli_provider import BACKSTAY, BASE_ENV, Providers, installed
from tests.adapters.cli_provider import namespace_providers as _namespace_providers
from tests.adapters.support import CANARY_KEY
from tests.gateway.test_runs_clis import Environs

from backstay.events import EVENTS_FILE

TURNS: Final = 4
MODEL: Final = "claude-sonnet-4-5"
TIMEOUT_S: Final = 240.0
BATCH_TIMEOUT_S: Final = 420.0
FINAL: Final = "All four steps are done."


@pytest.fixture(scope="module")
def providers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Providers]:
    yield from _namespace_providers(tmp_path_factory)


def _scenario(faults: bool) -> dict[str, Any]:
    return {
        "session": {
            "turns": [{"shell": f"echo step-{i} >> progress.txt"} for i in range(1, TURNS + 1)],
            "final": FINAL,
        },
        "faults": [
            {"fault": "overloaded", "turn": 2, "retry_after_s": 1},
            {"fault": "rate_limit", "turn": 3, "retry_after_s": 1},
        ]
        if faults
        else [],
    }


def _files_text(folder: Path) -> str:
    return "".join(
        p.read_text(encoding="utf-8", errors="replace") for p in folder.rglob("*") if p.is_file()
    )


def _batch(
    providers: Providers,
    tmp_path: Path,
    *,
    faults: bool,
    flags: tuple[str, ...] = (),
    extra_env: dict[str, str] | None = None,
) -> tuple[Any, dict[str, Any], Path, Environs]:
    """One Claude Code session as a one-task batch on a local Ray cluster inside the
    namespace: (the finished command, the provider's counters, the state dir, what was
    seen of the agent's processes)."""
    installed("claude-code")
    served = providers.serve(_scenario(faults))
    suite, state = tmp_path / "suite.yaml", tmp_path / "state"
    suite.write_text(
        yaml.safe_dump(
            {
                "suite": "ray-sessions",
                "defaults": {"adapter": "claude-code", "model": MODEL, "timeout_s": TIMEOUT_S},
                "tasks": [{"id": "session", "prompt": "Run the four steps, one at a time."}],
            },
            sort_keys=False,
        ),
        encoding="utf-8",
    )
    ray_tmp = Path(tempfile.mkdtemp(prefix="bsrg", dir="/tmp"))  # short: socket paths
    env = {
        **BASE_ENV,
        "HOME": os.environ.get("HOME", "/root"),
        "RAY_TMPDIR": str(ray_tmp),
        "ANTHROPIC_API_KEY": CANARY_KEY,
        "ANTHROPIC_BASE_URL": served.url,
        **(extra_env or {}),
    }
    argv = [
        *BACKSTAY, "batch", str(suite), "--state-dir", str(state),
        "--concurrency", "1", "--executor", "ray", *flags,
    ]  # fmt: skip
    try:
        with Environs(str(state), CANARY_KEY) as environs:
            done = providers.namespace.run(argv, timeout_s=BATCH_TIMEOUT_S, env=env, cwd=tmp_path)
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    return done, served.stats(), state, environs


def _agent_log(state: Path) -> str:
    logs = list(state.rglob("agent.log"))
    assert len(logs) == 1, logs
    return logs[0].read_text()


def _survived(
    done: Any,
    stats: dict[str, Any],
    state: Path,
    environs: Environs,
    *,
    gateway: str,
    retried: int = 2,
) -> None:
    """The session survived both failures in the gateway at ``gateway`` (a URL prefix);
    the batch's event log has ``retried`` retried requests (a shared gateway logs its
    own)."""
    log = _agent_log(state)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}\n{log}"
    # The CLI started once; its requests went through the gateway.
    assert log.count("started pid ") == 1, log
    assert f"through the gateway at {gateway}" in log, log
    workspace = next(state.rglob("progress.txt"))
    assert workspace.read_text().splitlines() == [f"step-{i}" for i in range(1, TURNS + 1)]
    # Each turn once, the refused turns 2 and 3 twice, the final answer once.
    expected = {str(t): 1 for t in range(1, TURNS + 2)} | {"2": 2, "3": 2}
    assert stats["by_turn"] == expected, stats
    metrics = json.loads(next(state.rglob("metrics.json")).read_text())
    assert metrics["api_calls"] == stats["requests"], (metrics, stats)
    assert metrics["tokens_input"] == stats["input_tokens"], (metrics, stats)
    assert metrics["tokens_output"] == stats["output_tokens"], (metrics, stats)
    # The worker recorded each retried request once, under the run's task.
    events = [json.loads(line) for line in (state / EVENTS_FILE).read_text().splitlines()]
    logged = [e for e in events if e["event"] == "request.retried"]
    assert len(logged) == retried, logged
    assert sum(e["event"] == "task.succeeded" for e in events) == 1
    # The real key: in no environment of the agent's processes, no file, no output.
    assert environs.seen, "no process of the agent was seen"
    assert environs.holding == set(), "the real key was in an agent process's environment"
    assert CANARY_KEY not in _files_text(state)
    assert CANARY_KEY not in done.stdout + done.stderr


def test_claude_code_on_a_ray_worker_survives_a_529_and_a_429_through_its_gateway(
    providers: Providers, tmp_path: Path
) -> None:
    _survived(*_batch(providers, tmp_path, faults=True), gateway="http://127.0.0.1:")


@pytest.mark.slow
def test_ray_workers_open_their_runs_at_a_shared_gateway_with_gateway_url(
    providers: Providers, tmp_path: Path
) -> None:
    installed("claude-code")
    port, token = 8791, "shared-gateway-token-for-ray-runs-0123"
    gateway = providers.namespace.popen(
        [*BACKSTAY, "gateway", "--agent-runs", "--port", str(port)],
        env={**BASE_ENV, "BACKSTAY_GATEWAY_TOKEN": token},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert gateway.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(gateway.stdout, selectors.EVENT_READ)
            assert selector.select(60.0), "the shared gateway did not start"
        assert "gateway listening" in gateway.stdout.readline()
        url = f"http://127.0.0.1:{port}"
        found = _batch(
            providers,
            tmp_path,
            faults=True,
            flags=("--gateway", url),
            extra_env={"BACKSTAY_GATEWAY_TOKEN": token},
        )
        _survived(*found, gateway=url, retried=0)
    finally:
        gateway.terminate()
        gateway.wait(timeout=30)


@pytest.mark.slow
def test_no_gateway_sends_the_ray_workers_cli_straight_to_its_provider(
    providers: Providers, tmp_path: Path
) -> None:
    done, stats, state, _ = _batch(providers, tmp_path, faults=False, flags=("--no-gateway",))
    log = _agent_log(state)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}\n{log}"
    assert "through the gateway" not in log, log
    assert stats["by_turn"] == {str(t): 1 for t in range(1, TURNS + 2)}, stats
    events = (state / EVENTS_FILE).read_text()
    assert "request.retried" not in events
