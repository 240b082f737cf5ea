"""``retry.policies``: check each policy's settings, resolve ``extends``, build the
``RetryPolicy`` objects, and remember where each of their values came from.

A policy starts from the policy it ``extends`` (one from the file, or a built-in one); a
policy named like a built-in one and without ``extends`` starts from that built-in's
settings without its per-kind and per-category limits (``extends: <its own name>`` keeps
them), so that what the file prints is what it means; any other starts from
``RetryPolicy``'s defaults. Mappings (``per_kind`` and each kind in it)
merge key by key; every other value replaces the inherited one.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any, Final

from backstay.config._document import Document
from backstay.config._fields import check, describe_value, listing, suggestion
from backstay.config._paths import Path
from backstay.config._sections import mapping, unknown_key
from backstay.config._source import DEFAULT, Source, SourceKind
from backstay.config._spec import (
    CATEGORY_NAMES,
    KIND_NAMES,
    KIND_OVERRIDE_FIELDS,
    POLICY_FIELDS,
    POLICY_NAME_PATTERN,
)
from backstay.errors import ConfigError
from backstay.policy.builtin import BUILTIN_POLICIES
from backstay.policy.retry import RetryPolicy

POLICIES_PATH: Final[Path] = ("retry", "policies")
_NAME = re.compile(POLICY_NAME_PATTERN)
_KNOWN_KEYS: Final = (*POLICY_FIELDS, "per_kind", "per_category")
# The per-kind and per-category mappings: their allowed names and what a name is.
_OVERRIDES: Final = {
    "per_kind": (KIND_NAMES, "a failure kind"),
    "per_category": (CATEGORY_NAMES, "an error category"),
}


@dataclasses.dataclass(frozen=True, slots=True)
class Policies:
    """The built policies (built-ins included), where each value came from, and every name
    the file declares (built or not: a reference to a broken policy is not also unknown)."""

    built: dict[str, RetryPolicy]
    sources: dict[str, dict[Path, Source]]
    declared: frozenset[str]


def _policy_path(name: str) -> Path:
    return (*POLICIES_PATH, name)


def _check_overrides(
    doc: Document, path: Path, raw: object, names: tuple[str, ...], what: str
) -> dict[str, dict[str, Any]]:
    body = mapping(doc, path, raw, f"{what.partition(' ')[2]} → settings")
    out: dict[str, dict[str, Any]] = {}
    for kind, settings in (body or {}).items():
        if kind not in names:
            doc.problem(
                (*path, kind),
                f"is not {what}{suggestion(kind, names)}; one of {', '.join(names)}",
            )
            continue
        kind_body = mapping(doc, (*path, kind), settings, "settings")
        clean: dict[str, Any] = {}
        for key, value in (kind_body or {}).items():
            field = KIND_OVERRIDE_FIELDS.get(key)
            if field is None:
                unknown_key(doc, (*path, kind), key, list(KIND_OVERRIDE_FIELDS))
                continue
            problems = check(field, value)
            for sub, reason in problems:
                doc.problem((*path, kind, key, *sub), reason)
            if not problems:
                clean[key] = value
        out[kind] = clean
    return out


def _check_policy(doc: Document, name: str, raw: object) -> dict[str, Any] | None:
    """The valid settings of one policy; ``None`` if it cannot be used at all."""
    path = _policy_path(name)
    if not _NAME.match(name):
        doc.problem(
            path, "a policy name starts with a letter and holds letters, digits, '_' and '-'"
        )
        return None
    return check_policy_settings(
        doc, path, raw, named="a policy is named by its key under policies; remove this"
    )


def check_policy_settings(
    doc: Document, path: Path, raw: object, *, named: str
) -> dict[str, Any] | None:
    """The valid settings of the policy mapping ``raw`` at ``path`` (``extends`` included);
    ``None`` if it is not a mapping. ``named`` is the problem given for a ``name`` key."""
    if raw is not None and not isinstance(raw, dict):
        doc.problem(path, f"must be a mapping of policy settings, got {describe_value(raw)}")
        return None
    clean: dict[str, Any] = {}
    for key, value in (raw or {}).items():
        if key in _OVERRIDES:
            clean[key] = _check_overrides(doc, (*path, key), value, *_OVERRIDES[key])
        elif key == "name":
            doc.problem((*path, key), named)
        elif key not in POLICY_FIELDS:
            unknown_key(doc, path, key, _KNOWN_KEYS)
        else:
            problems = check(POLICY_FIELDS[key], value)
            for sub, reason in problems:
                doc.problem((*path, key, *sub), reason)
            if not problems:
                clean[key] = value
    return clean


def merge_settings(base: Mapping[str, Any], own: Mapping[str, Any]) -> dict[str, Any]:
    """``own`` on top of ``base``: mappings merge key by key, any other value replaces."""
    out = dict(base)
    for key, value in own.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge_settings(out[key], value)
        else:
            out[key] = value
    return out


def flatten(data: Mapping[str, Any], prefix: Path = ()) -> dict[Path, Any]:
    """Leaf paths of nested mappings; an empty mapping and a list are leaves."""
    out: dict[Path, Any] = {}
    for key, value in data.items():
        if isinstance(value, Mapping) and value:
            out.update(flatten(value, (*prefix, str(key))))
        else:
            out[(*prefix, str(key))] = value
    return out


def _has(data: Mapping[str, Any], path: Path) -> bool:
    node: Any = data
    for part in path:
        if not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
    return True


def policy_settings(policy: RetryPolicy) -> dict[str, Any]:
    """The settings of ``policy`` as plain data, without its name."""
    data = policy.to_dict()
    del data["name"]
    return data


def build_policy(
    doc: Document, path: Path, settings: Mapping[str, Any], name: str
) -> RetryPolicy | None:
    """``RetryPolicy.from_dict(settings, name=name)``; its ``ConfigError`` (a rule relating
    several keys) becomes a problem at ``path`` and the key it names."""
    try:
        return RetryPolicy.from_dict(settings, name=name)
    except ConfigError as err:
        field = (err.where or "").partition(": ")[2]
        doc.problem((*path, *(field.split(".") if field else ())), err.reason)
        return None


class _Broken:
    """A policy whose parent cannot be had (reported once, where the reason is)."""


_BROKEN: Final = _Broken()
_Parent = str | RetryPolicy | _Broken | None


class _Resolver:
    def __init__(self, doc: Document, own: dict[str, dict[str, Any]], declared: set[str]):
        self.doc = doc
        self.own = own
        self.declared = declared
        self.parents: dict[str, _Parent] = {}
        self.built: dict[str, RetryPolicy | None] = {}
        self.sources: dict[str, dict[Path, Source]] = {}
        for name, policy in BUILTIN_POLICIES.items():
            source = Source(SourceKind.DEFAULT, f"built-in policy {name!r}")
            self.sources[name] = dict.fromkeys(flatten(policy_settings(policy)), source)

    def parent(self, name: str) -> _Parent:
        """A name from the file to build first, a built-in base policy, ``None`` for
        RetryPolicy's defaults, or ``_BROKEN`` (reported once, here or elsewhere)."""
        if name not in self.parents:
            self.parents[name] = self._find_parent(name)
        return self.parents[name]

    def _find_parent(self, name: str) -> _Parent:
        extends = self.own[name].get("extends")
        if extends is None:
            builtin = BUILTIN_POLICIES.get(name)
            # Named like a built-in: its settings, but what the file prints means exactly
            # that: no per-kind or per-category limits come along unseen.
            return None if builtin is None else _without_overrides(builtin)
        if extends == name and name in BUILTIN_POLICIES:
            return BUILTIN_POLICIES[name]
        if extends in self.own:
            return str(extends)
        if extends in self.declared:  # declared but unusable: its own problem says why
            return _BROKEN
        if extends in BUILTIN_POLICIES:
            return BUILTIN_POLICIES[extends]
        known = sorted(self.declared | set(BUILTIN_POLICIES))
        self.doc.problem(
            (*_policy_path(name), "extends"),
            f"unknown policy {extends!r}{suggestion(extends, known)}; known: {listing(known)}",
        )
        return _BROKEN

    def resolve(self, start: str) -> None:
        """Build ``start`` after the chain of file policies it extends (no recursion: a
        chain may be as long as the file)."""
        chain: list[str] = []
        name = start
        while name not in self.built:
            chain.append(name)
            parent = self.parent(name)
            if not isinstance(parent, str):
                break
            if parent in chain:
                cycle = [*chain[chain.index(parent) :], parent]
                reason = (
                    "extends itself" if len(cycle) == 2 else f"extends cycle: {' → '.join(cycle)}"
                )
                self.doc.problem((*_policy_path(parent), "extends"), reason)
                for member in chain:
                    self.built[member] = None
                return
            name = parent
        for member in reversed(chain):
            self.built[member] = self._build(member)

    def _build(self, name: str) -> RetryPolicy | None:
        parent = self.parent(name)
        base: RetryPolicy | None
        if isinstance(parent, _Broken):
            return None
        if isinstance(parent, str):
            base = self.built.get(parent)
            if base is None:
                return None
        else:
            base = parent
        own = {k: v for k, v in self.own[name].items() if k != "extends"}
        if not own and "extends" not in self.own[name] and name in BUILTIN_POLICIES:
            return BUILTIN_POLICIES[name]  # nothing (valid) of its own: the built-in itself
        merged = merge_settings(policy_settings(base), own) if base is not None else own
        policy = build_policy(self.doc, _policy_path(name), merged, name)
        if policy is None:
            return None
        self.sources[name] = self._sources(name, policy, base)
        return policy

    def _sources(
        self, name: str, policy: RetryPolicy, base: RetryPolicy | None
    ) -> dict[Path, Source]:
        own = self.own[name]
        inherited = self.sources.get(base.name, {}) if base is not None else {}
        parent = base.name if base is not None else ""
        out: dict[Path, Source] = {}
        for path in flatten(policy_settings(policy)):
            if _has(own, path):
                out[path] = self.doc.source_of((*_policy_path(name), *path)) or DEFAULT
            elif path in inherited:
                out[path] = inherited[path].inherited(parent)
            else:
                out[path] = DEFAULT
        return out


def _without_overrides(policy: RetryPolicy) -> RetryPolicy:
    return dataclasses.replace(policy, per_kind={}, per_category={})


def build_policies(doc: Document, raw: object) -> Policies:
    """Every policy of ``retry.policies`` that could be built, on top of the built-ins."""
    body = mapping(doc, POLICIES_PATH, raw, "policy name → settings") or {}
    own: dict[str, dict[str, Any]] = {}
    for name, settings in body.items():
        checked = _check_policy(doc, name, settings)
        if checked is not None:
            own[name] = checked
    declared = {name for name in body if _NAME.match(name)}
    resolver = _Resolver(doc, own, declared)
    for name in own:
        resolver.resolve(name)
    built = dict(BUILTIN_POLICIES)
    built.update({n: p for n, p in resolver.built.items() if p is not None})
    return Policies(built, resolver.sources, frozenset(declared))
