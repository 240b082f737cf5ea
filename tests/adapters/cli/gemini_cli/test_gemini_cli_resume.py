"""Why a Gemini CLI rerun starts afresh in the restored workspace instead of continuing the
CLI's session: the evidence, with the installed CLI (0.61).

Gemini CLI continues a session with ``--resume latest`` (or an id or index) in the same
``HOME`` and folder. The real CLI runs, inside a private network namespace, the fake
provider's scripted three-turn session (each turn a shell call appending a step to a
file) whose turn 2 is refused with a 503 (the CLI's own retries off: the session ends
there); then ``--resume latest`` with the prompt ``continue``. The conversation the resumed
CLI sends answers the turn-1 call with its result twice (its transcript keeps a result on
the call and again as a user message). Gemini refuses such a conversation with a 400
``INVALID_ARGUMENT`` ("Please ensure that the number of function response parts is equal
to the number of function call parts of the function call turn."), as the fake provider
does: the resumed session fails at once and step 2 never runs. Straight to Gemini a resumed
Gemini CLI session cannot go on, so backstay resumes one only through the gateway, which
drops the repeated result (``backstay.gateway.repair``; ``GeminiCliAdapter.can_resume``;
test_gemini_cli_gateway_resume.py; docs/gateway.md). Should a later CLI send each result
once, this test fails, and resuming straight to Gemini can be taken up.

``slow``: two CLI starts. Skipped, with the reason, when Gemini CLI is not installed
(``make agents``) or no namespace can be made here.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest
from tests.adapters.cli_provider import BASE_ENV, Providers, installed, namespace_providers
from tests.adapters.support import CANARY_KEY

from backstay.adapters.cli.gemini_cli import GeminiCliAdapter
from backstay.adapters.contract import AgentRequest

MODEL: Final = "gemini-2.5-flash"
TURNS: Final = 3
RUN_S: Final = 120.0


@pytest.fixture(scope="module")
def providers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Providers]:
    yield from namespace_providers(tmp_path_factory)


@pytest.mark.slow
def test_a_resumed_gemini_cli_session_answers_a_call_twice_and_is_refused(
    providers: Providers, tmp_path: Path
) -> None:
    located = installed("gemini-cli")
    served = providers.serve(
        {
            "session": {
                "turns": [{"shell": f"echo step-{i} >> progress.txt"} for i in range(1, TURNS + 1)],
                "final": "All three steps are done.",
            },
            "faults": [{"fault": "unavailable", "turn": 2}],
        }
    )
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    adapter = GeminiCliAdapter()
    request = AgentRequest(
        model=MODEL,
        workspace=workspace,
        output_dir=tmp_path / "out",
        timeout_s=RUN_S,
        prompt="Run the three steps, one command at a time.",
        env={**BASE_ENV, "GEMINI_API_KEY": CANARY_KEY},
        config={"base_url": served.url},
    )
    settings = adapter.settings_for(request)
    home_env = adapter.write_home(request, settings, tmp_path / "home")
    env = adapter.environment(request, settings, located, home_env)
    argv = adapter.command(request, settings, located.path)

    def gemini(prompt: str, *extra: str) -> int:
        path = tmp_path / "prompt.txt"
        path.write_text(prompt, encoding="utf-8")
        with path.open("rb") as stdin:
            done = providers.namespace.run(
                [*argv, *extra], timeout_s=RUN_S, env=env, cwd=workspace, stdin=stdin
            )
        return done.returncode

    # The session ends at turn 2's 503: step 1 done, turn 2 refused.
    assert gemini(request.prompt) != 0
    assert (workspace / "progress.txt").read_text().splitlines() == ["step-1"]
    assert served.stats()["by_turn"] == {"1": 1, "2": 1}
    # Resumed, the CLI answers the turn-1 call twice: refused as Gemini refuses it, and the
    # session goes no further.
    assert gemini("continue", "--resume", "latest") != 0
    stats = served.stats()
    assert stats["by_status"].get("400", 0) >= 1, stats
    assert stats["by_turn"] == {"1": 1, "2": 1}, stats
    assert (workspace / "progress.txt").read_text().splitlines() == ["step-1"]
