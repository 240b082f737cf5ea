from __future__ import annotations

import pytest

from backstay.errors import ConfigError
from backstay.runtime import Plan, Step


def _step(step_id: str, *deps: str) -> Step:
    return Step(id=step_id, action="act", depends_on=deps)


def test_order_puts_every_step_after_its_dependencies() -> None:
    plan = Plan(id="p", steps=(_step("c", "b"), _step("a"), _step("b", "a")))
    assert [s.id for s in plan.order()] == ["a", "b", "c"]


def test_a_dependency_cycle_is_refused() -> None:
    with pytest.raises(ConfigError, match="cycle"):
        Plan(id="p", steps=(_step("a", "b"), _step("b", "a")))


def test_an_unknown_dependency_is_refused() -> None:
    with pytest.raises(ConfigError, match="unknown step 'x'"):
        Plan(id="p", steps=(_step("a", "x"),))


def test_a_plan_longer_than_its_max_steps_is_refused() -> None:
    with pytest.raises(ConfigError, match="exceed max_steps=1"):
        Plan(id="p", steps=(_step("a"), _step("b")), max_steps=1)


def test_parameters_must_be_json() -> None:
    with pytest.raises(ConfigError, match="must be JSON"):
        Step(id="a", action="act", parameters={"x": object()})


def test_a_plan_survives_a_round_trip_through_a_dict() -> None:
    plan = Plan(
        id="p",
        steps=(Step(id="a", action="act", parameters={"k": [1]}, timeout_s=2.0), _step("b", "a")),
        metadata={"m": 1},
    )
    assert Plan.from_dict(plan.to_dict()) == plan
