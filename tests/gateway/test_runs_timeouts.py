"""A request the gateway holds longer than the agent CLI's own request timeout: ``backstay
run`` (inside a private network namespace, only the standard exported variables) of the
real Gemini CLI (60 s for a response's headers) and opencode (300 s) through a scripted
two-turn session whose turn 2 gets two 429s in a row, their ``retry-after`` adding up to
more than that limit (each within the gateway's ``--max-retry-after``).

The gateway waits each ``retry-after`` out while the CLI's request stays open (its timeout
raised above the gateway's deadline: ``request_timeout_s``), then the retry succeeds: the
run succeeds, the CLI starts once, the provider sees turn 2 twice and the others once.
Without the raised timeout the CLI drops the request at its limit and the session fails.

``slow``: each holds a request for over a minute (opencode over five).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest
from tests.adapters.cli_provider import (
    BACKSTAY,
    BASE_ENV,
    Providers,
    installed,
    namespace_providers,
)
from tests.adapters.support import CANARY_KEY

TURNS: Final = 2
FINAL: Final = "Both steps are done."
# Each of the two 429s' retry-after: together over the CLI's own limit on a response's
# headers (Gemini CLI 60 s, opencode 300 s).
RETRY_AFTER_S: Final = {"gemini-cli": 35, "opencode": 160}


@pytest.fixture(scope="module")
def providers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Providers]:
    yield from namespace_providers(tmp_path_factory)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("adapter", "model", "exported"),
    [
        (
            "gemini-cli",
            "gemini-2.5-flash",
            {"GEMINI_API_KEY": CANARY_KEY, "GOOGLE_GEMINI_BASE_URL": "{url}"},
        ),
        ("opencode", "gpt-5.4", {"OPENAI_API_KEY": CANARY_KEY, "OPENAI_BASE_URL": "{url}/v1"}),
    ],
)
def test_a_request_held_past_the_clis_own_timeout_still_succeeds_in_one_session(
    providers: Providers, tmp_path: Path, adapter: str, model: str, exported: dict[str, str]
) -> None:
    installed(adapter)
    retry_after_s = RETRY_AFTER_S[adapter]
    served = providers.serve(
        {
            "session": {
                "turns": [{"shell": f"echo step-{i} >> progress.txt"} for i in range(1, TURNS + 1)],
                "final": FINAL,
            },
            "faults": [
                {"fault": "rate_limit", "turn": 2, "retry_after_s": retry_after_s, "times": 2}
            ],
        }
    )
    workspace, out = tmp_path / "workspace", tmp_path / "out"
    workspace.mkdir()
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Run the two steps, one command at a time.", encoding="utf-8")
    env = {
        **BASE_ENV,
        "HOME": os.environ.get("HOME", "/root"),
        **{name: value.replace("{url}", served.url) for name, value in exported.items()},
    }
    timeout_s = 2 * retry_after_s + 240
    argv = [*BACKSTAY, "run", "--adapter", adapter, "--model", model, "--no-retry"]
    argv += ["--prompt-file", str(prompt), "--workspace", str(workspace)]
    argv += ["--output-dir", str(out), "--timeout", str(timeout_s)]
    done = providers.namespace.run(argv, timeout_s=timeout_s + 60, env=env)
    stats = served.stats()
    log = (out / "agent.log").read_text() if (out / "agent.log").exists() else ""
    assert done.returncode == 0, f"{done.stderr}\n{log}"
    assert log.count("started pid ") == 1, log
    assert "through the gateway at http://127.0.0.1:" in log, log
    lines = (workspace / "progress.txt").read_text().splitlines()
    assert lines == [f"step-{i}" for i in range(1, TURNS + 1)], log
    assert stats["by_turn"] == {"1": 1, "2": 3, "3": 1}, stats
    assert stats["by_status"].get("429") == 2, stats
