"""Scenario files and ``--fault`` specs → frozen objects, every problem with file:line."""

from __future__ import annotations

from pathlib import Path

import pytest

from backstay.errors import ConfigError
from backstay.fakeprovider import (
    Fault,
    FaultKind,
    Outage,
    RateLimit,
    Reply,
    Scenario,
    ToolCall,
    load_scenario,
    parse_fault,
)

GOOD = """\
seed: 7
reply:
  text: All done.
  tool_call:
    name: write_file
    arguments: {path: notes.txt, content: hello}
rate_limit:
  requests_per_minute: 600
sequence: [rate_limit, ok, {fault: server_error}]
faults:
  - fault: overloaded
    api: anthropic
    probability: 0.1
  - fault: unavailable
    outage: {start_s: 10, duration_s: 5}
  - fault: stall
    after_events: 3
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "scenario.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_scenario_file_becomes_frozen_objects(tmp_path: Path) -> None:
    scenario = load_scenario(_write(tmp_path, GOOD))
    assert scenario == Scenario(
        seed=7,
        reply=Reply(
            text="All done.",
            tool_call=ToolCall(
                name="write_file", arguments={"path": "notes.txt", "content": "hello"}
            ),
        ),
        rate_limit=RateLimit(requests_per_minute=600),
        faults=(
            Fault(kind=FaultKind.RATE_LIMIT, requests=(1,)),
            Fault(kind=FaultKind.SERVER_ERROR, requests=(3,)),
            Fault(kind=FaultKind.OVERLOADED, api="anthropic", probability=0.1),
            Fault(kind=FaultKind.UNAVAILABLE, outage=Outage(start_s=10, duration_s=5)),
            Fault(kind=FaultKind.STALL, after_events=3),
        ),
    )


def test_an_empty_file_is_the_plain_scenario(tmp_path: Path) -> None:
    assert load_scenario(_write(tmp_path, "")) == Scenario()


def test_every_problem_is_reported_with_its_line(tmp_path: Path) -> None:
    text = """\
faults:
  - fault: rate_limt
  - fault: server_error
    first: 1
    probability: 0.5
  - fault: slow
    retry_after_s: 3
  - fault: hang
    colour: red
rate_limit:
  requests_per_minute: 0
sequence: [ok, {fault: stall, after_events: -1}]
seed: many
"""
    with pytest.raises(ConfigError) as caught:
        load_scenario(_write(tmp_path, text))
    message = str(caught.value)
    file = str(tmp_path / "scenario.yaml")
    for expected in (
        f"{file}:2: faults[0].fault: unknown fault 'rate_limt' (did you mean 'rate_limit'?)",
        f"{file}:3: faults[1]: give at most one selector, got first, probability",
        f"{file}:7: faults[2].retry_after_s: applies only to",
        f"{file}:9: faults[3].colour: unknown key",
        f"{file}:11: rate_limit.requests_per_minute: must be >= 1, got 0",
        f"{file}:12: sequence[1].after_events: must be >= 0, got -1",
        f"{file}:13: seed: must be a whole number",
    ):
        assert expected in message
    assert "7 problems" in message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "[1, 2]",
            "must be a mapping of seed, reply, session, rate_limit, sequence, faults, got a list",
        ),
        ("faults: {a: 1}", "faults: must be a list of faults, got a mapping"),
        ("faults: [{first: 2}]", "faults[0].fault: is required"),
        ("faults: [{fault: hang, outage: {start_s: 1}}]", "faults[0].outage: needs duration_s"),
        ("reply: {tool_call: {arguments: {}}}", "reply.tool_call.name: must be a non-empty"),
        ("a: [", "invalid YAML"),
    ],
)
def test_shapes_that_are_wrong_are_named(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_scenario(_write(tmp_path, text))
    assert expected in str(caught.value)


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such file"):
        load_scenario(tmp_path / "absent.yaml")


@pytest.mark.parametrize(
    ("spec", "fault"),
    [
        ("rate_limit", Fault(kind=FaultKind.RATE_LIMIT)),
        (
            "rate_limit:first=2:retry_after_s=3",
            Fault(kind=FaultKind.RATE_LIMIT, first=2, retry_after_s=3),
        ),
        (
            "server_error:requests=1,3:api=openai",
            Fault(kind=FaultKind.SERVER_ERROR, requests=(1, 3), api="openai"),
        ),
        (
            "unavailable:outage_s=5:start_s=10",
            Fault(kind=FaultKind.UNAVAILABLE, outage=Outage(duration_s=5, start_s=10)),
        ),
        ("overloaded:probability=0.2", Fault(kind=FaultKind.OVERLOADED, probability=0.2)),
        ("slow:delay_s=0.5:model=gpt-5", Fault(kind=FaultKind.SLOW, delay_s=0.5, model="gpt-5")),
    ],
)
def test_fault_specs(spec: str, fault: Fault) -> None:
    assert parse_fault(spec) == fault


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("nope", "--fault nope: fault: unknown fault 'nope'"),
        ("rate_limit:first", "--fault rate_limit:first: expected key=value"),
        ("rate_limit:first=0", "--fault rate_limit:first=0: first: must be >= 1"),
        ("hang:colour=red", "colour: unknown key"),
    ],
)
def test_bad_fault_specs_name_the_flag(spec: str, expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_fault(spec)
    assert expected in str(caught.value)
