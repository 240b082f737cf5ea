"""``PolicyRegistry``: named retry policies, a default, and which policy each operation uses.

A registry is immutable: ``with_policy``, ``with_default`` and ``with_operation`` return a
new registry and leave the original untouched, so one registry can be shared by any number
of threads and tasks without a lock. Every lookup is one plain ``dict`` access; the
operation → policy table is resolved once, when the registry is built.

The built-in policies (``standard``, ``aggressive``, ``no_retry``, ``agent_dispatch``) are
preloaded; a policy registered under a built-in's name replaces it.

The process resolves policy names in one registry at a time (``use_registry`` swaps it
whole, ``current_registry`` reads it, ``resolve_policy`` looks a name up in it): the
built-ins until ``backstay.configure()`` installs the configured one.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any, Final, final

from backstay.errors import ConfigError
from backstay.policy.builtin import BUILTIN_POLICIES
from backstay.policy.protocols import CircuitBreakerLike
from backstay.policy.retry import RetryPolicy

__all__ = [
    "DEFAULT_POLICY_NAME",
    "DEFAULT_REGISTRY",
    "OperationType",
    "PolicyRegistry",
    "PolicySpec",
    "configured_breaker",
    "current_registry",
    "resolve_policy",
    "use_breakers",
    "use_registry",
]

DEFAULT_POLICY_NAME: Final = "standard"


class OperationType(enum.StrEnum):
    """The kinds of operation a policy can be chosen for."""

    LLM = "llm"
    AGENT = "agent"
    NETWORK = "network"
    FILE = "file"
    PERMISSION = "permission"


def _operation(value: str) -> str:
    try:
        return OperationType(value).value
    except ValueError:
        choices = ", ".join(op.value for op in OperationType)
        raise ConfigError(
            f"unknown operation type {value!r}; one of {choices}", where="operation_policies"
        ) from None


# Agent runs follow the adapter reliability contract unless the configuration says otherwise.
DEFAULT_OPERATION_POLICIES: Final[Mapping[str, str]] = MappingProxyType({"agent": "agent_dispatch"})


@final
class PolicyRegistry:
    """Named ``RetryPolicy`` objects, a default policy and an operation → policy mapping.

    ``policies`` are added to the built-ins (``builtins=False`` leaves those out); a name
    given twice is a ``ConfigError``. ``default_policy`` and every policy named in
    ``operation_policies`` must be registered.
    """

    __slots__ = ("_by_operation", "_default", "_default_name", "_names", "_operations", "_policies")

    _policies: Mapping[str, RetryPolicy]
    _default_name: str
    _default: RetryPolicy
    _operations: Mapping[str, str]
    _by_operation: Mapping[str, RetryPolicy]
    _names: tuple[str, ...]

    def __init__(
        self,
        policies: Iterable[RetryPolicy] = (),
        *,
        default_policy: str = DEFAULT_POLICY_NAME,
        operation_policies: Mapping[str, str] | None = None,
        builtins: bool = True,
    ) -> None:
        table: dict[str, RetryPolicy] = dict(BUILTIN_POLICIES) if builtins else {}
        seen: set[str] = set()
        for policy in policies:
            if not isinstance(policy, RetryPolicy):
                raise ConfigError(
                    f"expected a RetryPolicy, got {type(policy).__name__}", where="policies"
                )
            if policy.name in seen:
                raise ConfigError(f"policy {policy.name!r} is given twice", where="policies")
            seen.add(policy.name)
            table[policy.name] = policy
        if operation_policies is None:
            operation_policies = {
                op: name for op, name in DEFAULT_OPERATION_POLICIES.items() if name in table
            }
        self._init(table, default_policy, dict(operation_policies))

    def _init(
        self, table: dict[str, RetryPolicy], default: str, operations: dict[str, str]
    ) -> None:
        set_ = object.__setattr__
        known = ", ".join(sorted(table)) or "none"
        if default not in table:
            raise ConfigError(f"unknown policy {default!r}; known: {known}", where="default_policy")
        resolved: dict[str, str] = {}
        for op, name in operations.items():
            key = _operation(op)
            if name not in table:
                raise ConfigError(
                    f"unknown policy {name!r}; known: {known}", where=f"operation_policies.{key}"
                )
            resolved[key] = name
        set_(self, "_policies", MappingProxyType(table))
        set_(self, "_default_name", default)
        set_(self, "_default", table[default])
        set_(self, "_operations", MappingProxyType(resolved))
        # Keys are plain strings: an ``OperationType`` member hashes and compares as its value.
        set_(self, "_by_operation", {op: table[name] for op, name in resolved.items()})
        set_(self, "_names", tuple(sorted(table)))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"PolicyRegistry is immutable; use with_*() to change {name!r}")

    def _replace(
        self,
        *,
        table: dict[str, RetryPolicy] | None = None,
        default: str | None = None,
        operations: dict[str, str] | None = None,
    ) -> PolicyRegistry:
        new = object.__new__(PolicyRegistry)
        new._init(
            dict(self._policies) if table is None else table,
            self._default_name if default is None else default,
            dict(self._operations) if operations is None else operations,
        )
        return new

    # -- lookups: one dict access each ---------------------------------------------------

    def get(self, name: str) -> RetryPolicy:
        """The policy called ``name``; ``ConfigError`` naming the known ones if there is none."""
        try:
            return self._policies[name]
        except KeyError:
            known = ", ".join(self._names)
            raise ConfigError(f"unknown policy {name!r}; known: {known}", where="policy") from None

    def for_operation(self, operation: str) -> RetryPolicy:
        """The policy for ``operation`` (an ``OperationType`` or its value); the default
        policy when none is mapped."""
        return self._by_operation.get(operation, self._default)

    def __contains__(self, name: object) -> bool:
        return name in self._policies

    def __len__(self) -> int:
        return len(self._policies)

    def __repr__(self) -> str:
        return (
            f"PolicyRegistry({len(self._policies)} policies, default={self._default_name!r}, "
            f"operations={dict(self._operations)!r})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PolicyRegistry):
            return NotImplemented
        return (
            self._default_name == other._default_name
            and dict(self._operations) == dict(other._operations)
            and dict(self._policies) == dict(other._policies)
        )

    def __hash__(self) -> int:
        return hash((self._default_name, tuple(sorted(self._operations.items())), self._names))

    def names(self) -> tuple[str, ...]:
        """Every registered policy name, sorted."""
        return self._names

    def list(self) -> list[dict[str, Any]]:
        """``describe()`` of every policy, sorted by name."""
        return [self.describe(name) for name in self._names]

    @property
    def default_policy(self) -> str:
        """The name of the policy used when an operation has none of its own."""
        return self._default_name

    @property
    def default(self) -> RetryPolicy:
        return self._default

    @property
    def operation_policies(self) -> Mapping[str, str]:
        """Operation type → policy name, for the operations that have their own policy."""
        return self._operations

    def describe(self, name: str) -> dict[str, Any]:
        """Plain data about one policy: its settings, whether it is built in and unchanged,
        whether it is the default, and the operations that use it."""
        policy = self.get(name)
        settings = policy.to_dict()
        del settings["name"]
        operations = [op for op, mapped in self._operations.items() if mapped == name]
        if name == self._default_name:
            operations += [op.value for op in OperationType if op.value not in self._operations]
        return {
            "name": name,
            "builtin": BUILTIN_POLICIES.get(name) == policy,
            "default": name == self._default_name,
            "operations": sorted(operations),
            "settings": settings,
        }

    # -- changes: each returns a new registry --------------------------------------------

    def with_policy(self, policy: RetryPolicy) -> PolicyRegistry:
        """A registry with ``policy`` added, or replacing the one of the same name."""
        if not isinstance(policy, RetryPolicy):
            raise ConfigError(
                f"expected a RetryPolicy, got {type(policy).__name__}", where="policy"
            )
        table = dict(self._policies)
        table[policy.name] = policy
        return self._replace(table=table)

    def with_policies(self, policies: Iterable[RetryPolicy]) -> PolicyRegistry:
        """A registry with every policy of ``policies`` added or replaced (later ones win)."""
        table = dict(self._policies)
        for policy in policies:
            if not isinstance(policy, RetryPolicy):
                raise ConfigError(
                    f"expected a RetryPolicy, got {type(policy).__name__}", where="policies"
                )
            table[policy.name] = policy
        return self._replace(table=table)

    def with_default(self, name: str) -> PolicyRegistry:
        """A registry whose default policy is ``name`` (already registered)."""
        return self._replace(default=name)

    def with_operation(self, operation: str, name: str | None) -> PolicyRegistry:
        """A registry where ``operation`` uses policy ``name``; ``None`` removes the mapping
        so the operation falls back to the default."""
        operations = dict(self._operations)
        key = _operation(operation)
        if name is None:
            operations.pop(key, None)
        else:
            operations[key] = name
        return self._replace(operations=operations)


PolicySpec = RetryPolicy | str | None

# Until configure() or use_registry() says otherwise: the built-in policies, "standard" by
# default, and agent runs under the adapter contract's "agent_dispatch".
DEFAULT_REGISTRY: Final = PolicyRegistry()


class _Source:
    """The registry names are resolved in (one per process; swapped whole, never edited)."""

    registry: PolicyRegistry = DEFAULT_REGISTRY


def use_registry(registry: PolicyRegistry) -> None:
    """Resolve policy names, operation types and the default policy in ``registry`` from
    now on (process-wide); ``backstay.configure()`` does this with the configured one."""
    if not isinstance(registry, PolicyRegistry):
        raise ConfigError(
            f"expected a PolicyRegistry, got {type(registry).__name__}", where="registry"
        )
    _Source.registry = registry


class _Breakers:
    """Where ``call(operation=…)`` finds a breaker when it is given none (``configure()``
    installs the configured ``circuit_breaker``: one breaker per operation type)."""

    source: Callable[[str], CircuitBreakerLike] | None = None


def use_breakers(source: Callable[[str], CircuitBreakerLike] | None) -> None:
    """From now on (process-wide), a call with an ``operation`` and no ``breaker`` runs
    under ``source(operation)``; ``None``: under no breaker."""
    _Breakers.source = source


def configured_breaker(operation: str | None) -> CircuitBreakerLike | None:
    """The breaker ``use_breakers`` gives ``operation`` (``None``: none is configured)."""
    source = _Breakers.source
    return None if source is None or operation is None else source(operation)


def current_registry() -> PolicyRegistry:
    """The registry policy names are resolved in now."""
    return _Source.registry


def resolve_policy(policy: PolicySpec, operation: str | None) -> RetryPolicy:
    """A policy object from a policy, a policy name, or an operation type; with neither,
    the registry's default policy."""
    if isinstance(policy, RetryPolicy):
        return policy
    if isinstance(policy, str):
        return _Source.registry.get(policy)
    if policy is not None:
        raise ConfigError(f"expected a RetryPolicy or a name, got {policy!r}", where="policy")
    if operation is not None:
        return _Source.registry.for_operation(operation)
    return _Source.registry.default
