"""Scripted sessions: each turn's shell call in the request's own wire format, the turn read
from the conversation (so a retried request gets the same turn), faults at a turn, the
turn in the stats and the request log, and the checks of ``Scenario.shell_session``."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from tests.fakeprovider import sdk
from tests.fakeprovider.session_agents import SESSIONS, Agent

from backstay.errors import ConfigError
from backstay.fakeprovider import (
    SHELL_TOOLS,
    FakeProvider,
    Fault,
    FaultKind,
    Scenario,
    Session,
    Turn,
    load_scenario,
)
from backstay.fakeprovider._select import FaultPicker

STEPS = [f"step-{i}\n" for i in range(1, 5)]
APIS = list(SESSIONS)


def _lines(workdir: Path) -> list[str]:
    return (workdir / "progress.txt").read_text().splitlines(keepends=True)


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("api", APIS)
def test_a_four_turn_session_runs_each_step_once_then_answers_the_final_text(
    api: str, stream: bool, tmp_path: Path
) -> None:
    with FakeProvider(Scenario.shell_session(4, final="Four steps done.")) as fake:
        final = SESSIONS[api](Agent(tmp_path), fake.url, stream=stream)
        stats = fake.stats()
    assert final == "Four steps done."
    assert _lines(tmp_path) == STEPS
    assert dict(stats.by_turn) == {1: 1, 2: 1, 3: 1, 4: 1, 5: 1}
    assert dict(stats.by_status) == {200: 5}


@pytest.mark.parametrize("api", APIS)
def test_failed_requests_at_turns_three_and_five_are_retried_as_the_same_turn(
    api: str, tmp_path: Path
) -> None:
    scenario = Scenario.shell_session(
        4,
        faults={
            3: "overloaded",
            5: Fault(kind=FaultKind.RATE_LIMIT, retry_after_s=1),
        },
    )
    agent = Agent(tmp_path, retries=1)
    with FakeProvider(scenario) as fake:
        SESSIONS[api](agent, fake.url, stream=False)
        stats = fake.stats()
    assert _lines(tmp_path) == STEPS
    # Each turn once, plus the two failed requests.
    assert dict(stats.by_turn) == {1: 1, 2: 1, 3: 2, 4: 1, 5: 2}
    assert dict(stats.by_fault) == {"overloaded": 1, "rate_limit": 1}
    assert agent.failures == 2


def test_times_fails_that_many_requests_at_the_turn(tmp_path: Path) -> None:
    fault = Fault(kind=FaultKind.SERVER_ERROR, turn=2, times=2)
    agent = Agent(tmp_path, retries=2)
    with FakeProvider(Scenario.shell_session(3, faults={2: fault})) as fake:
        SESSIONS["anthropic"](agent, fake.url, stream=False)
        stats = fake.stats()
    assert _lines(tmp_path) == STEPS[:3]
    assert dict(stats.by_turn) == {1: 1, 2: 3, 3: 1, 4: 1}
    assert dict(stats.by_fault) == {"server_error": 2}


def test_a_session_that_starts_again_continues_at_the_turn_its_conversation_holds(
    tmp_path: Path,
) -> None:
    tools = [{"name": "Bash", "input_schema": {"type": "object"}}]
    done = [
        {"role": "user", "content": "Do the steps."},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "Bash"}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "b", "name": "Bash"}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "b"}]},
    ]
    with FakeProvider(Scenario.shell_session(4)) as fake, sdk.anthropic_client(fake.url) as c:
        (use,) = c.messages.create(
            model=sdk.ANTHROPIC_MODEL, max_tokens=100, tools=tools, messages=done
        ).content
        stats = fake.stats()
    assert use.type == "tool_use"
    assert use.input["command"] == "echo step-3 >> progress.txt"
    assert dict(stats.by_turn) == {3: 1}


def test_a_request_offering_no_shell_tool_is_outside_the_session(tmp_path: Path) -> None:
    scenario = Scenario.shell_session(2, faults={1: "server_error"})
    with FakeProvider(scenario) as fake, sdk.anthropic_client(fake.url) as client:
        side = client.messages.create(
            model=sdk.ANTHROPIC_MODEL,
            max_tokens=100,
            messages=[{"role": "user", "content": "Name this session."}],
        )
        stats = fake.stats()
    assert [b.text for b in side.content if b.type == "text"] == [
        "Fake reply to: Name this session."
    ]
    assert (dict(stats.by_turn), dict(stats.by_fault)) == ({}, {})


def test_the_request_log_and_the_stats_endpoint_carry_the_turn(tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    scenario = Scenario.shell_session(1, faults={2: "unavailable"})
    with FakeProvider(scenario, log_path=log) as fake:
        SESSIONS["openai-responses"](Agent(tmp_path, retries=1), fake.url, stream=True)
        served = json.loads(httpx.get(fake.url + "/_backstay/stats", timeout=sdk.TIMEOUT_S).text)
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(e["turn"], e["status"]) for e in entries] == [(1, 200), (2, 503), (2, 200)]
    assert served["by_turn"] == {"1": 1, "2": 2}


def test_each_known_shell_tool_gets_its_own_argument_shape() -> None:
    from backstay.fakeprovider.session import shell_arguments  # noqa: PLC0415

    shapes = {name: shell_arguments(name, "echo hi") for name in SHELL_TOOLS}
    assert shapes["Bash"]["command"] == "echo hi"
    assert shapes["exec_command"] == {"cmd": "echo hi"}
    assert shapes["run_shell_command"]["command"] == "echo hi"
    assert shapes["shell"] == {"command": ["bash", "-lc", "echo hi"]}


def test_a_turn_fault_picks_only_requests_at_its_turn() -> None:
    fault = Fault(kind=FaultKind.OVERLOADED, turn=2, times=2)
    picker = FaultPicker((fault,), seed=0, started=0.0)
    turns = [1, 2, None, 2, 2, 3]
    picked = [picker.pick("anthropic", "m", stream=False, now=0.0, turn=t) for t in turns]
    assert picked == [None, fault, None, fault, None, None]


def test_shell_session_builds_the_steps_and_the_turn_faults() -> None:
    scenario = Scenario.shell_session(
        2, file="out/log.txt", faults={1: FaultKind.OVERLOADED}, final="Done."
    )
    assert scenario.session == Session(
        turns=(
            Turn(shell="echo step-1 >> out/log.txt"),  # noqa: S604 — a scripted step, not run
            Turn(shell="echo step-2 >> out/log.txt"),  # noqa: S604
        ),
        final="Done.",
    )
    assert scenario.faults == (Fault(kind=FaultKind.OVERLOADED, turn=1),)


@pytest.mark.parametrize(
    ("call", "where", "message"),
    [
        (lambda: Scenario.shell_session(0), "shell_session.n_turns", "must be >= 1"),
        (lambda: Scenario.shell_session(2, file="../x"), "shell_session.file", "relative file"),
        (lambda: Scenario.shell_session(2, file="a b"), "shell_session.file", "relative file"),
        (
            lambda: Scenario.shell_session(2, faults={4: "overloaded"}),
            "shell_session.faults[4]",
            "must be a turn from 1 to 3",
        ),
        (
            lambda: Scenario.shell_session(2, faults={1: "overload"}),
            "shell_session.faults[1]",
            "must be a Fault or one of",
        ),
        (
            lambda: Scenario.shell_session(
                2, faults={1: Fault(kind=FaultKind.OVERLOADED, first=1)}
            ),
            "shell_session.faults[1]",
            "without a selector",
        ),
        (
            lambda: Scenario.shell_session(2, faults={"2": "overloaded"}),
            "shell_session.faults['2']",
            "must be a turn from 1 to 3",
        ),
        (
            lambda: Scenario.shell_session(2, faults=["overloaded"]),  # type: ignore[arg-type]
            "shell_session.faults",
            "must be a mapping of turn to fault",
        ),
        (lambda: Fault(kind=FaultKind.OVERLOADED, times=2), "times", "only with the turn"),
        (lambda: Fault(kind=FaultKind.OVERLOADED, turn=0), "turn", "must be >= 1"),
        (
            lambda: Fault(kind=FaultKind.OVERLOADED, turn=1, first=1),
            "fault",
            "at most one selector, got first, turn",
        ),
        (lambda: Session(turns=()), "session.turns", "non-empty tuple of Turn"),
        (lambda: Turn(shell=""), "turn.shell", "non-empty string"),
    ],
)
def test_mistakes_are_named(call: object, where: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        call()  # type: ignore[operator]
    assert caught.value.where == where
    assert message in str(caught.value)


def test_a_scenario_file_scripts_a_session_with_turn_faults(tmp_path: Path) -> None:
    path = tmp_path / "session.yaml"
    path.write_text(
        """\
session:
  turns:
    - shell: echo step-1 >> progress.txt
    - shell: echo step-2 >> progress.txt
  final: Both done.
faults:
  - fault: rate_limit
    turn: 2
    times: 2
    retry_after_s: 1
""",
        encoding="utf-8",
    )
    assert load_scenario(path) == Scenario(
        session=Session(
            turns=(
                Turn(shell="echo step-1 >> progress.txt"),  # noqa: S604
                Turn(shell="echo step-2 >> progress.txt"),  # noqa: S604
            ),
            final="Both done.",
        ),
        faults=(Fault(kind=FaultKind.RATE_LIMIT, turn=2, times=2, retry_after_s=1),),
    )


def test_a_wrong_session_in_a_file_is_named_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "session.yaml"
    path.write_text(
        "session:\n  turns:\n    - shel: echo hi\n  end: x\nfaults: [{fault: hang, times: 2}]\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as caught:
        load_scenario(path)
    message = str(caught.value)
    for expected in (
        f"{path}:3: session.turns[0].shel: unknown key",
        f"{path}:4: session.end: unknown key",
        f"{path}:5: faults[0].times: applies only with the turn selector",
    ):
        assert expected in message, message


def test_a_gemini_call_answered_twice_is_refused_as_gemini_refuses_it() -> None:
    # A resumed Gemini CLI session answers a call twice (docs/gateway.md): Gemini's 400.
    from google.genai import errors, types  # noqa: PLC0415 - only this test needs them

    call = types.Part(function_call=types.FunctionCall(name="run_shell_command", args={}))
    answer = types.Part.from_function_response(name="run_shell_command", response={"output": ""})
    asked = types.Content(role="user", parts=[types.Part(text="Do the steps.")])
    with FakeProvider(Scenario.shell_session(2)) as fake, sdk.gemini_client(fake.url) as client:
        twice = [asked, types.Content(role="model", parts=[call]), types.Content(
            role="user", parts=[answer, answer]
        )]  # fmt: skip
        with pytest.raises(errors.ClientError) as refused:
            client.models.generate_content(model=sdk.GEMINI_MODEL, contents=twice)
        once = [*twice[:2], types.Content(role="user", parts=[answer])]
        client.models.generate_content(model=sdk.GEMINI_MODEL, contents=once)
        stats = fake.stats()
    assert refused.value.code == 400
    assert refused.value.status == "INVALID_ARGUMENT"
    assert "number of function response parts is equal" in str(refused.value.message)
    assert dict(stats.by_status) == {400: 1, 200: 1}
