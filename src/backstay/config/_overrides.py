"""Overrides on top of the file: ``BACKSTAY__…`` environment variables, then ``--set``.

``BACKSTAY__RETRY__POLICIES__STANDARD__MAX_ATTEMPTS=5`` and
``--set retry.policies.standard.max_attempts=5`` both set that key. Path parts of an
environment variable are separated by ``__`` and lower-cased; values of both are read as
YAML (``5`` is a number, ``true`` a boolean, ``[a, b]`` a list, an empty value null).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

import yaml

from backstay.config._document import Document
from backstay.config._paths import parse_path
from backstay.config._source import Source, SourceKind
from backstay.errors import ConfigError

ENV_PREFIX: Final = "BACKSTAY__"
SET_FLAG: Final = "--set"

UNSET = object()


def yaml_value(doc: Document, text: str, source: Source) -> Any:
    """``text`` read as YAML (empty: null); ``UNSET`` and a problem if it cannot be read."""
    try:
        return yaml.safe_load(text) if text.strip() else None
    except yaml.YAMLError as err:
        problem = getattr(err, "problem", None) or "not valid YAML"
        doc.problem((), f"cannot read the value {text!r}: {problem}", source=source)
        return UNSET


def apply_env(doc: Document, environ: Mapping[str, str]) -> None:
    """Apply every ``BACKSTAY__*`` variable of ``environ``, in name order."""
    for name in sorted(k for k in environ if k.upper().startswith(ENV_PREFIX)):
        source = Source(SourceKind.ENV, name)
        parts = tuple(p.lower() for p in name[len(ENV_PREFIX) :].split("__"))
        if not all(parts):
            doc.problem((), "malformed name: parts are separated by one '__'", source=source)
            continue
        value = yaml_value(doc, environ[name], source)
        if value is not UNSET:
            doc.set(parts, value, source)


def apply_sets(doc: Document, items: Iterable[str]) -> None:
    """Apply ``--set KEY=VALUE`` items, in order (a later one wins)."""
    for item in items:
        source = Source(SourceKind.CLI, SET_FLAG)
        key, sep, text = item.partition("=")
        if not sep:
            doc.problem((), f"expected KEY=VALUE, got {item!r}", source=source)
            continue
        try:
            path = parse_path(key.strip(), where=SET_FLAG)
        except ConfigError as err:
            doc.problem((), err.reason, source=source)
            continue
        value = yaml_value(doc, text, source)
        if value is not UNSET:
            doc.set(path, value, source)
