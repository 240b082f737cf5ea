"""``backstay run`` with each real CLI, inside a private network namespace against the fake
provider there, given nothing but the provider's standard variables: no adapter option
names a key or a variable to pass, and codex is pointed at the fake by ``OPENAI_BASE_URL``
alone (which Codex itself ignores). The run succeeds with its usage recorded, and the key
appears nowhere.

Skipped, with the reason, when the CLI is not installed (`make agents`) or namespaces
cannot be made here.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Final

import pytest
from tests.agents.clis import CANARY_KEY
from tests.agents.test_clis_in_netns import BACKSTAY, PORT, URL, installed, stats

import backstay
from backstay.testing.netns import NetworkNamespace

# CLI → its model, and the standard variables a user of its provider exports.
RUNS: Final[dict[str, tuple[str, dict[str, str]]]] = {
    "claude-code": (
        "claude-sonnet-4-5",
        {"ANTHROPIC_API_KEY": CANARY_KEY, "ANTHROPIC_BASE_URL": URL},
    ),
    "codex": ("gpt-5.4", {"OPENAI_API_KEY": CANARY_KEY, "OPENAI_BASE_URL": f"{URL}/v1"}),
    "gemini-cli": (
        "gemini-2.5-flash",
        {"GEMINI_API_KEY": CANARY_KEY, "GOOGLE_GEMINI_BASE_URL": URL},
    ),
}
# What backstay itself needs to start and to find the managed installs: not the agent's.
BACKSTAY_ENV: Final = ("PATH", "HOME", "XDG_CACHE_HOME", "BACKSTAY_AGENTS_DIR")
# The backstay under test, wherever the run's working directory is.
SOURCE: Final = str(Path(backstay.__file__).resolve().parents[1])
RUN_TIMEOUT_S: Final = 120


@pytest.mark.parametrize("name", list(RUNS))
def test_backstay_run_succeeds_with_only_the_standard_variables_exported(
    name: str, backstay_netns: NetworkNamespace, tmp_path: Path
) -> None:
    installed(name)
    model, exported = RUNS[name]
    backstay_netns.popen(
        [*BACKSTAY, "fake-provider", "serve", "--port", str(PORT)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    assert stats(backstay_netns)["requests"] == 0
    (tmp_path / "ws").mkdir()
    (tmp_path / "prompt.md").write_text("say hi", encoding="utf-8")
    out = tmp_path / "out"
    own = {key: os.environ[key] for key in BACKSTAY_ENV if key in os.environ}
    own["PYTHONPATH"] = SOURCE
    argv = [
        *BACKSTAY,
        "run",
        *("--adapter", name, "--model", model),
        *("--prompt-file", str(tmp_path / "prompt.md"), "--workspace", str(tmp_path / "ws")),
        *("--output-dir", str(out), "--timeout", str(RUN_TIMEOUT_S)),
    ]
    done = backstay_netns.run(argv, env=own | exported, cwd=tmp_path, timeout_s=RUN_TIMEOUT_S + 30)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["exit_code"] == 0
    assert metrics["api_calls"] >= 1
    assert metrics["tokens_input"] > 0
    seen = stats(backstay_netns)
    assert seen["requests"] >= 1
    assert set(seen["by_status"]) == {"200"}
    assert CANARY_KEY not in done.stdout + done.stderr
    for path in out.rglob("*"):
        if path.is_file():
            assert CANARY_KEY.encode() not in path.read_bytes(), path
