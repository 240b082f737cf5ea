"""The real Codex CLI, run by the engine inside a private network namespace against the
fake provider there, its four-turn session dying at turn 3 (``resume_support``): the next
attempt continues the session (``codex exec resume``) and each step lands once. Slow: the
Claude Code tests carry the same check in the quick suite.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest
from tests.adapters.cli.resume_support import RESUMED_TURNS, SESSION, START, STEPS, run_session
from tests.adapters.cli_provider import BASE_ENV, Providers, installed, namespace_providers
from tests.adapters.support import CANARY_KEY

from backstay.adapters.cli.codex import CodexAdapter
from backstay.adapters.session import read_session_record
from backstay.engine.states import TaskState
from backstay.taxonomy import FailureKind
from backstay.testing.fakeclock import FakeClock

pytestmark = pytest.mark.slow

MODEL: Final = "gpt-5.4"
ENV: Final = {**BASE_ENV, "OPENAI_API_KEY": CANARY_KEY}


@pytest.fixture(scope="module")
def providers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Providers]:
    yield from namespace_providers(tmp_path_factory)


@pytest.fixture(autouse=True)
def cli() -> None:
    installed("codex")


def test_a_codex_session_that_died_mid_way_is_continued_and_each_step_done_once(
    providers: Providers, backstay_clock: FakeClock, tmp_path: Path
) -> None:
    served = providers.serve(SESSION)
    session = run_session(
        CodexAdapter(launcher=providers.launcher),
        tmp_path=tmp_path,
        clock=backstay_clock,
        model=MODEL,
        env=ENV,
        config={"base_url": f"{served.url}/v1"},
    )
    assert session.state is TaskState.SUCCEEDED, session.log()
    assert [a.failure.kind if a.failure else None for a in session.attempts] == [
        FailureKind.SERVER_ERROR,
        None,
    ]
    assert session.notes == START + STEPS
    assert served.stats()["by_turn"] == RESUMED_TURNS
    first = read_session_record(Path(session.attempts[0].output_dir))
    second = read_session_record(Path(session.attempts[1].output_dir))
    assert first is not None
    assert first.session_id
    assert first.turns >= 1
    assert second is not None
    assert second.resumed
    assert f"-m {MODEL} {first.session_id} -" in session.log()
    assert " exec resume " in session.log()
    assert [session.metrics(i)["attempt_start"] for i in (0, 1)] == ["fresh", "resumed_session"]
    # The resumed attempt counts its own model calls, not the first attempt's again.
    assert session.metrics(1)["api_calls"] == 3
