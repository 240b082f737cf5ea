"""examples/mixed-agents: two real agent CLIs and an API adapter in one `backstay batch`,
against the fake provider, all inside a private network namespace.

Skipped, with the reason, when a CLI is not installed (`make agents`) or namespaces
cannot be made here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Final

from tests.agents.test_clis_in_netns import installed, stats

from backstay.testing.netns import NetworkNamespace

ROOT: Final = Path(__file__).parents[2]
EXAMPLE: Final = ROOT / "examples" / "mixed-agents"
BACKSTAY: Final = [sys.executable, "-c", "from backstay.cli import main; main()"]
CANARY_KEY: Final = "sk-ant-api03-CANARYexample0123456789abcdefABCDEFGH"
PORT: Final = 8787  # the port the example's suite names; always free inside the namespace
URL: Final = f"http://127.0.0.1:{PORT}"


def test_the_mixed_agents_example_runs_to_the_end(
    backstay_netns: NetworkNamespace, tmp_path: Path
) -> None:
    for name in ("claude-code", "codex"):
        installed(name)
    backstay_netns.popen(
        [
            *BACKSTAY,
            "fake-provider",
            "serve",
            "--port",
            str(PORT),
            "--scenario",
            str(EXAMPLE / "scenario.yaml"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    assert stats(backstay_netns, URL)["requests"] == 0
    env = dict(os.environ, ANTHROPIC_API_KEY=CANARY_KEY, OPENAI_API_KEY=CANARY_KEY)
    state = tmp_path / "state"
    done = backstay_netns.run(
        [*BACKSTAY, "batch", str(EXAMPLE / "suite.yaml"), "--state-dir", str(state)],
        env=env,
        cwd=tmp_path,
        timeout_s=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    status = backstay_netns.run(
        [*BACKSTAY, "status", "--state-dir", str(state), "--json"], env=env, timeout_s=60
    )
    report = json.loads(status.stdout)
    assert report["by_state"]["succeeded"] == report["total"] == 3, status.stdout
    assert report["attempts"] == 4  # one task retried the rate-limited request
    assert report["failures_by_kind"] == {"rate_limit": 1}
    notes = state / "runs" / "notes-codex" / "T0" / "run_01" / "workspace" / "notes.txt"
    assert notes.read_text() == "written by the agent\n"
    seen = stats(backstay_netns, URL)
    assert seen["by_fault"] == {"rate_limit": 1}
    outputs = done.stdout + done.stderr + status.stdout
    logs = "".join(p.read_text(errors="replace") for p in state.rglob("*.log"))
    assert CANARY_KEY not in outputs + logs
