"""``TaskSpec.resolved``: the spec an attempt runs with its whole environment equals the
one ``dataclasses.replace`` makes with every check, field for field, and a bad
environment is refused as it would be."""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path
from typing import Any

import pytest
from tests.engine.support import spec

from backstay.adapters.contract import TierConfig
from backstay.engine import TaskSpec
from backstay.engine.suite_runs import RunFamily
from backstay.errors import ConfigError
from backstay.fallback.candidate import Candidate
from backstay.policy.spend import SpendBudget


def _same(fast: TaskSpec, slow: TaskSpec) -> None:
    assert fast == slow
    assert type(fast) is type(slow)
    for field in dataclasses.fields(TaskSpec):
        mine, theirs = getattr(fast, field.name), getattr(slow, field.name)
        assert mine == theirs, field.name
        assert type(mine) is type(theirs), field.name
    assert fast.operation_id == slow.operation_id
    assert fast.request(Path("out")) == slow.request(Path("out"))


_OPTIONS: list[dict[str, Any]] = [
    {},
    {"tier": TierConfig(tier_id="T2", system_prompt="sys")},
    {"env": {"OWN": "1"}, "inherit_env": False, "tenant": "acme"},
    {"budget": SpendBudget(usd=1.5, tokens=100), "stall_timeout_s": 3.0},
    {
        "fallbacks": [Candidate(adapter="fake", model="m2")],
        "context_window": 1000,
        "limits": {"max_output_tokens": 10},
        "config": {"k": [1, 2]},
    },
    {"keep_prompt": True, "policy": "standard"},
]
_ENVS: list[dict[str, str]] = [{}, {"A": "1"}, {"PATH": "/bin", "KEY": "sk-x", "OWN": "2"}]


@pytest.mark.parametrize(("options", "env"), list(itertools.product(_OPTIONS, _ENVS)))
def test_the_resolved_spec_equals_the_one_replace_makes(
    tmp_path: Path, options: dict[str, Any], env: dict[str, str]
) -> None:
    first = spec(tmp_path / "run_01" / "ws", **options)
    family = RunFamily(start=0, first=first, runs=12, template=None, run_dir=str(tmp_path))
    for run in (1, 2, 12):
        task = family.spec(run)
        fast = task.resolved(env)
        _same(fast, dataclasses.replace(task, env=env, inherit_env=False))
        assert fast.limits is not task.limits  # its own, as a spec made whole has
        env["LATER"] = "changed"  # the caller's mapping changes after: the spec does not
        assert "LATER" not in fast.env
        env.pop("LATER")


@pytest.mark.parametrize("bad", [{"A": 1}, {2: "x"}, ["A=1"]])
def test_a_bad_environment_is_refused_as_replace_refuses_it(tmp_path: Path, bad: Any) -> None:
    task = spec(tmp_path)
    with pytest.raises(ConfigError) as slow:
        dataclasses.replace(task, env=bad, inherit_env=False)
    with pytest.raises(ConfigError) as fast:
        task.resolved(bad)
    assert str(fast.value) == str(slow.value)
