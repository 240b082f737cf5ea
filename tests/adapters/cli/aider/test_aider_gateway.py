"""Aider's anthropic/… and gemini/… models through the gateway ``backstay run`` starts, end to
end: backstay inside a private network namespace with nothing but the provider's standard
exported variables (its key, its base URL pointing at a fake provider in the namespace),
the real Aider as its child. The session is four model calls (Aider's own lint finds a
syntax error in the file it wrote and sends it back, three times); the provider refuses
the second call with a 529 (or 503) and the third with a 429 and ``retry-after``.

The gateway absorbs both: the run succeeds, Aider starts once and makes its four calls,
none retried by itself; the provider sees each call answered once plus the two refused
requests; metrics.json counts what the provider answered, refused requests included, and
its tokens, once. While Aider runs, the real key is in no environment of its processes;
afterwards it is in no file the run left and nothing backstay printed.

Skipped, with the reason, when Aider is not installed (``make agents``) or no namespace
can be made here. Each run takes about 12 s: ``slow``, as the OpenAI one is
(``tests/gateway/test_runs_clis.py``). ``sonnet``, Aider's alias of an Anthropic model,
goes the same way.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest
from tests.adapters.aider_support import (
    BACKSTAY,
    CANARY_KEY,
    NamespacedFake,
    files_under,
    installed_aider,
)
from tests.adapters.cli_provider import BASE_ENV
from tests.gateway.test_runs_clis import Environs

from backstay.agents import Located
from backstay.testing.netns import NetworkNamespace, unavailable_reason

TIMEOUT_S: Final = 120.0
# A whole-file edit of hello.txt and a Python file with a syntax error: with --auto-lint,
# Aider sends the lint errors back three times, so the session is four calls.
REPLY: Final = (
    "Here they are.\n\nhello.txt\n```\nhello world\n```\n\n"
    "check.py\n```\ndef f(:\n    return 1\n```\n"
)
CALLS: Final = 4


@pytest.fixture(scope="module")
def aider() -> Located:
    return installed_aider()


@pytest.fixture(scope="module")
def namespace(aider: Located) -> Iterator[NetworkNamespace]:
    reason = unavailable_reason()
    if reason is not None:
        pytest.skip(f"no network namespace here: {reason}")
    with NetworkNamespace() as ns:
        yield ns


@pytest.fixture
def fake_for(namespace: NetworkNamespace, tmp_path: Path) -> Iterator[list[NamespacedFake]]:
    started: list[NamespacedFake] = []
    yield started
    for fake in started:
        fake.stop()


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    """One provider's model, its standard variables and the refusal of its second call."""

    model: str
    key: str
    base_url: str
    path: str
    first_fault: str
    first_status: str


CASES: Final = (
    Case(
        model="anthropic/claude-sonnet-4-5",
        key="ANTHROPIC_API_KEY",
        base_url="ANTHROPIC_BASE_URL",
        path="",
        first_fault="overloaded",
        first_status="529",
    ),
    Case(  # Aider's alias of claude-sonnet-4-5
        model="sonnet",
        key="ANTHROPIC_API_KEY",
        base_url="ANTHROPIC_BASE_URL",
        path="",
        first_fault="overloaded",
        first_status="529",
    ),
    Case(
        model="gemini/gemini-2.5-flash",
        key="GEMINI_API_KEY",
        base_url="GEMINI_API_BASE",
        path="/v1beta",
        first_fault="unavailable",
        first_status="503",
    ),
)


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=lambda case: case.model.partition("/")[0])
def test_aider_survives_a_refusal_and_a_429_in_one_session_through_backstay_run(
    namespace: NetworkNamespace, fake_for: list[NamespacedFake], tmp_path: Path, case: Case
) -> None:
    fake = NamespacedFake(
        namespace,
        tmp_path / "fake",
        reply=REPLY,
        faults=[
            {"fault": case.first_fault, "requests": [2], "retry_after_s": 1},
            {"fault": "rate_limit", "requests": [4], "retry_after_s": 1},
        ],
    )
    fake_for.append(fake)
    workspace, out = tmp_path / "workspace", tmp_path / "out"
    workspace.mkdir()
    prompt = tmp_path / "prompt.md"
    prompt.write_text("Write hello world into hello.txt, and check.py.", encoding="utf-8")
    env = {
        **BASE_ENV,
        "HOME": os.environ.get("HOME", "/root"),
        case.key: CANARY_KEY,
        case.base_url: f"http://127.0.0.1:{fake.port}{case.path}",
    }
    argv = [*BACKSTAY, "run", "--adapter", "aider", "--model", case.model]
    argv += ["--prompt-file", str(prompt), "--workspace", str(workspace)]
    argv += ["--output-dir", str(out), "--timeout", str(TIMEOUT_S)]
    argv += ["--adapter-option", "edit_format=whole"]
    argv += ["--adapter-option", "extra_args=[--auto-lint]"]
    with Environs(str(tmp_path), CANARY_KEY) as environs:
        done = namespace.run(argv, timeout_s=TIMEOUT_S + 60, env=env)
    stats = fake.stats()
    log = (out / "agent.log").read_text() if (out / "agent.log").exists() else ""
    assert done.returncode == 0, f"{done.stderr}\n{log}"
    # Aider started once, through the gateway, and made its four calls, none retried.
    assert log.count("started pid ") == 1, log
    assert "aider: through the gateway at http://127.0.0.1:" in log, log
    assert f"aider made {CALLS} API call(s), {CALLS} answered, 0 retries of its own" in log
    assert (workspace / "hello.txt").read_text() == "hello world\n"
    # The provider: each call answered once, plus the two refused requests.
    assert stats["by_status"] == {"200": CALLS, case.first_status: 1, "429": 1}, stats
    assert stats["requests"] == CALLS + 2, stats
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["api_calls"] == stats["requests"], (metrics, stats)
    assert metrics["tokens_input"] == stats["input_tokens"] > 0, (metrics, stats)
    assert metrics["tokens_output"] == stats["output_tokens"] > 0, (metrics, stats)
    # The real key: in no environment of Aider's processes, no file, nothing printed.
    assert environs.seen, "no process of Aider's was seen"
    assert environs.holding == set(), "the real key was in an Aider process's environment"
    assert CANARY_KEY not in files_under(out)
    assert CANARY_KEY not in done.stdout + done.stderr
