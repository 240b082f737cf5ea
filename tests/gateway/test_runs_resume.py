"""When the gateway cannot absorb a failure, the next attempt continues the CLI session:
``backstay run`` with the gateway on (the default) and nothing but the standard exported
variables, inside a private network namespace, running the real Claude Code through the
fake provider's scripted four-turn session whose turn 3 is refused with 529s for longer
than the gateway's policy allows.

The gateway gives up and hands the last 529 to the CLI, whose session ends there (its own
retries are off). The run's next attempt continues that session (``claude --resume``)
with a run token of its own, in the workspace as the session left it: the run succeeds,
each step is in the workspace file once, the provider saw turns 1 and 2 once, and the
real key is in no file the run left.

Two ways past the gateway's policy: a ``retry-after`` longer than it waits
(``max_retry_after_s``: it gives up at the first 529), and 529s until the gateway's
failures open the model's circuit whose probe is further away than a configured gateway
policy waits (``slow``: its backoff waits about 10 s, then the open circuit's 503 carries
the probe's time as the attempt's wait, so the run's next attempt is the probe). Under the
built-in policy the gateway waits for that probe itself: the session goes on in one CLI
start (``slow``).

Skipped, with the reason, when Claude Code is not installed (``make agents``) or no
namespace can be made here.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest
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
from backstay.breaker import BreakerSettings
from backstay.gateway import GATEWAY_POLICY

TURNS: Final = 4
TIMEOUT_S: Final = 240.0
FINAL: Final = "All four steps are done."
STEPS: Final = [f"step-{i}" for i in range(1, TURNS + 1)]


def _scenario(**fault: Any) -> dict[str, Any]:
    return {
        "session": {
            "turns": [{"shell": f"echo step-{i} >> progress.txt"} for i in range(1, TURNS + 1)],
            "final": FINAL,
        },
        "faults": [{"fault": "overloaded", "turn": 3, **fault}],
    }


@pytest.fixture(scope="module")
def providers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Providers]:
    yield from namespace_providers(tmp_path_factory)


@pytest.fixture(autouse=True)
def cli() -> None:
    installed("claude-code")


def _files_text(folder: Path) -> str:
    return "".join(
        p.read_text(encoding="utf-8", errors="replace") for p in folder.rglob("*") if p.is_file()
    )


def _run_continued(
    providers: Providers,
    tmp_path: Path,
    scenario: dict[str, Any],
    *flags: str,
    starts: int = 2,
    failed: str = "server_error/ERR_HTTP_529_OVERLOADED",
) -> tuple[int, str]:
    """``backstay run`` of the session; checks that its second attempt continued the
    first's session, which ``failed`` (its ``starts``-th the run's last; with ``starts``
    1, that its one CLI start went on), and the run succeeded; the requests the provider
    saw at turn 3, and the run's ``agent.log``."""
    served = providers.serve(scenario)
    workspace, out = tmp_path / "workspace", tmp_path / "out"
    workspace.mkdir()
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Run the four steps, one command at a time.", encoding="utf-8")
    env = {
        **BASE_ENV,
        "HOME": os.environ.get("HOME", "/root"),
        "ANTHROPIC_API_KEY": CANARY_KEY,
        "ANTHROPIC_BASE_URL": served.url,
    }
    argv = [*BACKSTAY, "run", "--adapter", "claude-code", "--model", "claude-sonnet-4-5"]
    argv += ["--prompt-file", str(prompt), "--workspace", str(workspace)]
    argv += ["--output-dir", str(out), "--timeout", str(TIMEOUT_S), *flags]
    done = providers.namespace.run(argv, timeout_s=TIMEOUT_S * 2 + 60, env=env)
    stats = served.stats()
    log = (out / "agent.log").read_text() if (out / "agent.log").exists() else ""
    assert done.returncode == 0, f"{done.stderr}\n{log}"
    # Every CLI start through the gateway: the first failed of what the gateway handed on,
    # the second continued the session (or the one start went on).
    assert log.count("started pid ") == starts, log
    assert log.count("through the gateway at http://127.0.0.1:") == starts, log
    assert "attempt 1 starts: fresh" in log, log
    if starts > 1:
        assert f"attempt_1 failed: {failed}" in log, log
        assert "attempt 2 starts: resumed_session" in log, log
        record = read_session_record(out)
        assert record is not None, log
        assert record.session_id, record
        assert record.resumed, record
        assert f"--resume {record.session_id}" in log, log
    # Each step once: the continued session went on from turn 3 in the workspace as the
    # first attempt left it.
    assert (workspace / "progress.txt").read_text().splitlines() == STEPS, log
    by_turn = dict(stats["by_turn"])
    refused_turn = by_turn.pop("3")
    assert by_turn == {"1": 1, "2": 1, "4": 1, "5": 1}, stats
    assert stats["by_status"]["529"] == refused_turn - 1, stats
    # metrics.json counts every request the provider answered, the refused ones included.
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["api_calls"] == stats["requests"], (metrics, stats)
    assert metrics["tokens_input"] == stats["input_tokens"], (metrics, stats)
    # The run succeeded: the snapshot and the CLI's kept home are gone.
    assert not (out / SNAPSHOT_DIR).exists()
    assert not (out / SESSION_HOME_DIR).exists()
    assert CANARY_KEY not in _files_text(out) + done.stdout + done.stderr
    return int(refused_turn), log


def test_claude_code_continues_its_session_after_a_retry_after_longer_than_the_gateway_waits(
    providers: Providers, tmp_path: Path
) -> None:
    retry_after = GATEWAY_POLICY.max_retry_after_s + 100.0
    scenario = _scenario(retry_after_s=retry_after)
    # The gateway gave up at the first 529; the continued session's turn 3 was answered.
    assert _run_continued(providers, tmp_path, scenario)[0] == 2


# The built-in gateway policy, but waiting no more than 10 s for a retry (the probe is 30 s
# away): the gateway cannot absorb a circuit its failures open.
SHORT_WAITS: Final = f"""retry:
  policies:
    gateway:
      max_attempts: {GATEWAY_POLICY.max_attempts}
      initial_delay_s: {GATEWAY_POLICY.initial_delay_s}
      max_delay_s: {GATEWAY_POLICY.max_delay_s}
      deadline_s: {GATEWAY_POLICY.deadline_s}
      max_retry_after_s: 10
      per_kind: {{unknown: {{max_attempts: 2}}}}
"""


@pytest.mark.slow
def test_claude_code_continues_its_session_after_the_gateway_opened_the_circuit(
    providers: Providers, tmp_path: Path
) -> None:
    # 529s until the gateway's failures open the model's circuit, whose probe (30 s) is
    # further than its policy waits: it answers the open circuit's 503, which says when
    # the probe is ("next probe in N s"), and the attempt's failure carries that wait, so
    # the run's next attempt waits for the probe instead of agent_dispatch's 2 s.
    breaker = BreakerSettings()
    config = tmp_path / "backstay.yaml"
    config.write_text(SHORT_WAITS, encoding="utf-8")
    scenario = _scenario(times=breaker.failure_threshold, retry_after_s=0.1)
    failed = "server_error/ERR_HTTP_503_UNAVAILABLE"
    refused, log = _run_continued(
        providers, tmp_path, scenario, "--config", str(config), failed=failed
    )
    # The continued session's turn 3 was the circuit's probe, and was answered.
    assert refused == breaker.failure_threshold + 1
    assert "next probe in" in log, log


@pytest.mark.slow
def test_claude_code_goes_on_in_one_start_when_the_gateway_waits_for_the_probe(
    providers: Providers, tmp_path: Path
) -> None:
    # 529s until the gateway's failures open the model's circuit; its probe (30 s) is
    # within the built-in policy's waits: the gateway waits, sends turn 3 as the probe,
    # and the CLI's session goes on in its one start.
    breaker = BreakerSettings()
    scenario = _scenario(times=breaker.failure_threshold, retry_after_s=0.1)
    refused, log = _run_continued(providers, tmp_path, scenario, starts=1)
    assert refused == breaker.failure_threshold + 1
    assert "next probe in" not in log, log
