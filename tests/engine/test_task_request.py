"""``TaskSpec.request`` assembles the attempt's request from the spec's checked fields:
the same request, field for field, as ``AgentRequest`` built with every check."""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path
from typing import Any

import pytest
from tests.engine.support import spec

from backstay.adapters.contract import AgentRequest, TierConfig
from backstay.engine import TaskSpec
from backstay.engine.suite_runs import RunFamily
from backstay.store.location import parse_store


def _checked(task: TaskSpec, output_dir: Any, store: Any = None) -> AgentRequest:
    """The request as built with every check of ``AgentRequest``."""
    return AgentRequest(
        model=task.model,
        workspace=task.workspace,
        output_dir=output_dir,
        timeout_s=task.timeout_s,
        prompt=task.prompt,
        prompt_file=task.prompt_file,
        env=task.env,
        tier=task.tier,
        config=task.config,
        stall_timeout_s=task.stall_timeout_s,
        tenant=task.tenant,
        store=store,
    )


def _same(fast: AgentRequest, slow: AgentRequest) -> None:
    assert fast == slow
    for field in dataclasses.fields(AgentRequest):
        mine, theirs = getattr(fast, field.name), getattr(slow, field.name)
        assert mine == theirs, field.name
        assert type(mine) is type(theirs), field.name


def test_the_request_knows_every_field_of_agent_request() -> None:
    # A field added to AgentRequest must be given by TaskSpec.request too.
    assert [f.name for f in dataclasses.fields(AgentRequest)] == [
        "model",
        "workspace",
        "output_dir",
        "timeout_s",
        "prompt",
        "prompt_file",
        "env",
        "tier",
        "config",
        "stall_timeout_s",
        "launcher",
        "tenant",
        "store",
        "session",
    ]


_TIERS = [None, TierConfig(tier_id="T0"), TierConfig(tier_id="T1", system_prompt="be brief")]
_OPTIONS: list[dict[str, Any]] = [
    {},
    {"env": {"A": "1", "B": "two"}},
    {"config": {"max_tokens": 64, "prices": {"m": {"input_per_mtok": 1, "output_per_mtok": 2}}}},
    {"stall_timeout_s": 5.0, "tenant": "acme"},
    {"workspace_text": "relative/ws"},
]


@pytest.mark.parametrize(("tier", "options"), list(itertools.product(_TIERS, _OPTIONS)))
def test_the_request_equals_the_checked_one(
    tmp_path: Path, tier: TierConfig | None, options: dict[str, Any]
) -> None:
    prompt_file = tmp_path / "prompt.txt"
    prompt_file.write_text("from a file")
    store = parse_store(str(tmp_path / "state"))
    for prompt in ({"prompt": "do it"}, {"prompt": None, "prompt_file": str(prompt_file)}):
        given = {**options, **prompt}
        workspace = given.pop("workspace_text", tmp_path / "ws")
        task = spec(workspace, tier=tier, **given)
        family = RunFamily(start=0, first=task, runs=30, template=None, run_dir=str(tmp_path))
        for run in (1, 2, 17, 30):
            other = family.spec(run)
            for output_dir in (tmp_path / f"attempt_{run}", Path(), Path("rel/out")):
                for where in (None, store):
                    _same(
                        other.request(output_dir, store=where), _checked(other, output_dir, where)
                    )


def test_an_output_dir_given_as_text_is_checked_and_made_a_path(tmp_path: Path) -> None:
    task = spec(tmp_path)
    request = task.request(str(tmp_path / "out"))  # type: ignore[arg-type]
    _same(request, _checked(task, tmp_path / "out"))
    with pytest.raises(Exception, match="output_dir"):
        task.request("")  # type: ignore[arg-type]


def test_the_request_cannot_change_the_specs_settings(tmp_path: Path) -> None:
    task = spec(tmp_path, env={"A": "1"}, config={"k": "v"})
    request = task.request(tmp_path / "out")
    with pytest.raises(TypeError):
        request.env["A"] = "2"  # type: ignore[index]
    with pytest.raises(TypeError):
        request.config["k"] = "w"  # type: ignore[index]
    assert task.env == {"A": "1"}
    assert task.config == {"k": "v"}
