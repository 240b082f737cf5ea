"""Mock scenarios: loading from mappings and files, and errors naming the step."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from backstay.adapters.mock._scenario import MAX_STEPS_CHARS, Scenario
from backstay.errors import ConfigError


def test_attempts_past_the_last_repeat_the_last() -> None:
    scenario = Scenario.from_data({"attempts": [[{"exit": 1}], [{"exit": 0}]]})
    assert [scenario.steps_for(n) for n in (1, 2, 3)] == [
        [{"exit": 1}],
        [{"exit": 0}],
        [{"exit": 0}],
    ]


def test_a_yaml_file_and_a_json_file_load_the_same(tmp_path: Path) -> None:
    data = {"attempts": [[{"print": "hi", "repeat": 2}, {"error": "rate_limit"}]]}
    (tmp_path / "s.json").write_text(json.dumps(data), encoding="utf-8")
    (tmp_path / "s.yaml").write_text(
        "attempts:\n  - - print: hi\n      repeat: 2\n    - error: rate_limit\n", encoding="utf-8"
    )
    assert Scenario.load(tmp_path / "s.json") == Scenario.load(str(tmp_path / "s.yaml"))
    assert Scenario.load(tmp_path / "s.json") == Scenario.from_data(data)


def test_resets_at_becomes_epoch_seconds() -> None:
    moment = dt.datetime(2026, 5, 1, 12, 0, tzinfo=dt.UTC)
    for value in (moment.isoformat(), moment, int(moment.timestamp())):
        scenario = Scenario.from_data({"attempts": [[{"error": "quota", "resets_at": value}]]})
        assert scenario.steps_for(1)[0]["resets_at"] == int(moment.timestamp())


def test_an_unreadable_file_names_the_setting(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        Scenario.load(tmp_path / "missing.yaml", where="config.scenario")
    assert info.value.where == "config.scenario"


@pytest.mark.parametrize(
    ("data", "where"),
    [
        ([], "scenario"),
        ({"attempts": [], "extra": 1}, "scenario"),
        ({"attempts": "print"}, "scenario.attempts"),
        ({"attempts": [{"print": "x"}]}, "scenario.attempts[0]"),
        ({"attempts": [["print"]]}, "scenario.attempts[0][0]"),
        ({"attempts": [[{"print": "x", "exit": 0}]]}, "scenario.attempts[0][0]"),
        ({"attempts": [[{"shout": "x"}]]}, "scenario.attempts[0][0]"),
        ({"attempts": [[], [{"print": "x", "loud": True}]]}, "scenario.attempts[1][0].loud"),
        ({"attempts": [[{"print": 3}]]}, "scenario.attempts[0][0].print"),
        ({"attempts": [[{"sleep": -1}]]}, "scenario.attempts[0][0].sleep"),
        ({"attempts": [[{"sleep": True}]]}, "scenario.attempts[0][0].sleep"),
        ({"attempts": [[{"print": "x", "repeat": 1.5}]]}, "scenario.attempts[0][0].repeat"),
        ({"attempts": [[{"hang": False}]]}, "scenario.attempts[0][0].hang"),
        ({"attempts": [[{"exit": 256}]]}, "scenario.attempts[0][0].exit"),
        ({"attempts": [[{"error": "gremlins"}]]}, "scenario.attempts[0][0].error"),
        (
            {"attempts": [[{"error": "quota", "resets_at": "soon"}]]},
            "scenario.attempts[0][0].resets_at",
        ),
        (
            {"attempts": [[{"error": "quota", "resets_at": "2026-05-01T12:00:00"}]]},
            "scenario.attempts[0][0].resets_at",
        ),
        ({"attempts": [[{"write_file": "/etc/passwd"}]]}, "scenario.attempts[0][0].write_file"),
        ({"attempts": [[{"write_file": "../out.txt"}]]}, "scenario.attempts[0][0].write_file"),
        ({"attempts": [[{"print": "x" * MAX_STEPS_CHARS}]]}, "scenario.attempts[0]"),
    ],
)
def test_invalid_scenarios_name_the_step_and_option(data: Any, where: str) -> None:
    with pytest.raises(ConfigError) as info:
        Scenario.from_data(data)
    assert info.value.where == where
