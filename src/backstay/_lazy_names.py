"""A package's names imported on first use (PEP 562), so that importing one module of a
package does not load the whole of it.

A package keeps a table from each public name to the module that defines it, and its
module-level ``__getattr__`` / ``__dir__`` ask these two functions. A name once loaded is
bound in the package's namespace, so ``__getattr__`` runs once per name."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any


def load_name(namespace: dict[str, Any], name: str, *tables: Mapping[str, str]) -> Any:
    """``name`` of the package whose globals are ``namespace``: imported from the module
    the first of ``tables`` that holds it names, and bound there; ``AttributeError`` for a
    name no table holds."""
    module = next((table[name] for table in tables if name in table), None)
    if module is None:
        raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    namespace[name] = value
    return value


def listed_names(namespace: Mapping[str, Any]) -> list[str]:
    """The names ``dir()`` lists for a package: what it has bound and its ``__all__``."""
    return sorted({*namespace, *namespace.get("__all__", ())})
