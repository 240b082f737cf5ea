"""PolicyRegistry: named policies, a default, operation → policy, immutable changes."""

from __future__ import annotations

import time

import pytest

from backstay import ConfigError
from backstay.policy import AGENT_DISPATCH, BUILTIN_POLICIES, STANDARD, RetryPolicy
from backstay.policy.registry import OperationType, PolicyRegistry

FAST = RetryPolicy(name="fast", max_attempts=2, initial_delay_s=0.01, max_delay_s=0.1)


def test_the_built_in_policies_are_preloaded() -> None:
    assert PolicyRegistry().names() == tuple(sorted(BUILTIN_POLICIES))


def test_builtins_can_be_left_out() -> None:
    registry = PolicyRegistry([FAST], default_policy="fast", builtins=False)
    assert registry.names() == ("fast",)


def test_get_returns_the_named_policy() -> None:
    assert PolicyRegistry().get("agent_dispatch") is AGENT_DISPATCH


def test_get_of_an_unknown_name_names_the_known_ones() -> None:
    with pytest.raises(ConfigError, match=r"unknown policy 'nope'; known: agent_dispatch, "):
        PolicyRegistry().get("nope")


def test_the_default_policy_is_standard() -> None:
    registry = PolicyRegistry()
    assert registry.default_policy == "standard"
    assert registry.default is STANDARD


def test_for_operation_returns_the_mapped_policy() -> None:
    registry = PolicyRegistry(operation_policies={"agent": "agent_dispatch"})
    assert registry.for_operation("agent") is AGENT_DISPATCH


def test_for_operation_accepts_an_operation_type() -> None:
    registry = PolicyRegistry(operation_policies={OperationType.AGENT: "agent_dispatch"})
    assert registry.for_operation(OperationType.AGENT) is AGENT_DISPATCH


def test_an_unmapped_operation_falls_back_to_the_default() -> None:
    registry = PolicyRegistry([FAST], default_policy="fast")
    assert registry.for_operation("network") is FAST


def test_an_operation_type_it_does_not_know_falls_back_to_the_default() -> None:
    assert PolicyRegistry().for_operation("teleport") is STANDARD


def test_an_unknown_default_policy_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"default_policy: unknown policy 'nope'"):
        PolicyRegistry(default_policy="nope")


def test_an_operation_mapped_to_an_unknown_policy_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"operation_policies.llm: unknown policy 'nope'"):
        PolicyRegistry(operation_policies={"llm": "nope"})


def test_an_unknown_operation_type_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"unknown operation type 'teleport'; one of llm, "):
        PolicyRegistry(operation_policies={"teleport": "standard"})


def test_a_policy_given_twice_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"policy 'fast' is given twice"):
        PolicyRegistry([FAST, FAST])


def test_a_policy_named_like_a_built_in_replaces_it() -> None:
    mine = STANDARD.derive(max_attempts=9)
    assert PolicyRegistry([mine]).get("standard").max_attempts == 9


def test_with_policy_returns_a_new_registry_and_leaves_the_old_one_alone() -> None:
    before = PolicyRegistry()
    after = before.with_policy(FAST)
    assert "fast" in after
    assert "fast" not in before


def test_with_policy_replaces_a_policy_of_the_same_name() -> None:
    registry = PolicyRegistry([FAST]).with_policy(FAST.derive(max_attempts=7))
    assert registry.get("fast").max_attempts == 7


def test_with_policy_rejects_something_that_is_not_a_policy() -> None:
    with pytest.raises(ConfigError, match="expected a RetryPolicy, got dict"):
        PolicyRegistry().with_policy({"name": "x"})  # type: ignore[arg-type]


def test_with_policies_adds_several_at_once() -> None:
    registry = PolicyRegistry().with_policies([FAST, FAST.derive(name="faster")])
    assert {"fast", "faster"} <= set(registry.names())


def test_with_default_changes_the_fallback_of_every_unmapped_operation() -> None:
    registry = PolicyRegistry([FAST]).with_default("fast")
    assert registry.for_operation("file") is FAST


def test_with_default_of_an_unknown_policy_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown policy 'nope'"):
        PolicyRegistry().with_default("nope")


def test_with_operation_maps_an_operation() -> None:
    registry = PolicyRegistry().with_operation("agent", "agent_dispatch")
    assert registry.for_operation("agent") is AGENT_DISPATCH


def test_with_operation_none_removes_the_mapping() -> None:
    registry = PolicyRegistry(operation_policies={"agent": "agent_dispatch"})
    assert registry.with_operation("agent", None).for_operation("agent") is STANDARD


def test_a_registry_cannot_be_changed_in_place() -> None:
    registry = PolicyRegistry()
    with pytest.raises(AttributeError, match="immutable"):
        registry._default_name = "no_retry"


def test_registries_with_the_same_content_are_equal_and_hash_alike() -> None:
    one = PolicyRegistry().with_policy(FAST)
    two = PolicyRegistry([FAST])
    assert one == two
    assert hash(one) == hash(two)


def test_describe_gives_settings_and_use() -> None:
    registry = PolicyRegistry(operation_policies={"agent": "agent_dispatch"})
    described = registry.describe("agent_dispatch")
    assert described["name"] == "agent_dispatch"
    assert described["builtin"] is True
    assert described["default"] is False
    assert described["operations"] == ["agent"]
    assert described["settings"]["initial_delay_s"] == 2.0


def test_describe_lists_the_operations_that_fall_back_to_the_default() -> None:
    registry = PolicyRegistry(operation_policies={"agent": "agent_dispatch"})
    assert registry.describe("standard")["operations"] == ["file", "llm", "network", "permission"]


def test_describe_says_a_changed_built_in_is_not_built_in() -> None:
    registry = PolicyRegistry([STANDARD.derive(max_attempts=9)])
    assert registry.describe("standard")["builtin"] is False


def test_a_thousand_policies_register_and_resolve() -> None:
    policies = [RetryPolicy(name=f"p{i}", max_attempts=i % 7 + 1) for i in range(1000)]
    registry = PolicyRegistry(policies, default_policy="p999", operation_policies={"llm": "p1"})
    assert len(registry) == 1000 + len(BUILTIN_POLICIES)
    assert all(registry.get(f"p{i}").max_attempts == i % 7 + 1 for i in range(1000))
    assert registry.for_operation("llm").name == "p1"
    assert registry.for_operation("agent").name == "p999"


def test_lookups_take_well_under_a_millisecond_each() -> None:
    # The real figure is tens of nanoseconds; the bound only catches an accidental O(n).
    policies = [RetryPolicy(name=f"p{i}") for i in range(1000)]
    registry = PolicyRegistry(policies, operation_policies={"llm": "p500"})
    rounds = 10_000
    started = time.perf_counter()
    for _ in range(rounds):
        registry.for_operation("llm")
        registry.get("p999")
    assert (time.perf_counter() - started) / rounds < 1e-3


def test_list_describes_every_policy_sorted() -> None:
    listed = PolicyRegistry().list()
    assert [p["name"] for p in listed] == sorted(p["name"] for p in listed)
    assert {"standard", "aggressive", "no_retry", "agent_dispatch"} <= {p["name"] for p in listed}
