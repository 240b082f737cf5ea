"""Adapter names and adapter options, as a suite (or ``backstay run``) gives them.

Names are checked against the adapter registry: every adapter that can be had now and
every name reserved for one backstay will ship. An adapter that can be had also checks
its own settings (``validate_config``); a reserved one cannot yet, and is taken as given.

Secrets are never written in a suite: an option that would hold one (``api_key``,
``token``, ``password`` …) is refused without repeating its value, and the agent gets the
key from the environment variable ``api_key_env`` names. An adapter that reads its key
from a variable it is told about (its own ``api_key_env`` setting: the API adapters) is
also given that name as its setting, so a variable of any name reaches it.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any, Final

from backstay.adapters.harness.config import check_settings
from backstay.adapters.registry import (
    PLANNED_ADAPTERS,
    adapter_class,
    adapter_names,
    get_adapter,
)
from backstay.config._document import Document
from backstay.config._fields import check, listing, suggestion
from backstay.config._paths import Path, format_path
from backstay.config._sections import mapping
from backstay.config.suite.model import AdapterOptions
from backstay.config.suite.spec import ADAPTER_OPTION_FIELDS, RUN_FIELDS, SECRET_KEY_PATTERN
from backstay.errors import ConfigError

_SECRET_KEY: Final = re.compile(SECRET_KEY_PATTERN)
_KEY_ENV: Final = "api_key_env"
_INDEX: Final = re.compile(r"\[[^\]]*\]")


def known_adapters() -> tuple[str, ...]:
    """Every adapter name a suite may use: available now or reserved, sorted."""
    return tuple(sorted(set(adapter_names()) | set(PLANNED_ADAPTERS)))


def adapter_reference(doc: Document, path: Path, raw: object, known: Collection[str]) -> str | None:
    """``raw`` if it is a known adapter name; a problem at ``path`` otherwise."""
    problems = check(RUN_FIELDS["adapter"], raw)
    for sub, reason in problems:
        doc.problem((*path, *sub), reason)
    if problems or not isinstance(raw, str):
        return None
    if raw not in known:
        doc.problem(
            path, f"unknown adapter {raw!r}{suggestion(raw, known)}; known: {listing(known)}"
        )
        return None
    return raw


def _secret_reason(key: str) -> str:
    if key.lower().replace("-", "_") in ("api_key", "apikey"):
        return (
            "an API key is never given inline (its value is not shown): use "
            "api_key_env: NAME, the environment variable that holds it"
        )
    return (
        "secrets are never given inline (its value is not shown): keep it in an "
        "environment variable and name it in pass_env"
    )


def reads_key_env(adapter: str) -> bool:
    """Whether ``adapter`` takes ``api_key_env`` as a setting of its own (it names the
    variable the adapter reads its key from); ``False`` for one not available now."""
    if adapter not in adapter_names():
        return False
    try:
        cls = adapter_class(adapter)
    except ConfigError:  # a broken third-party entry point: reported where it is checked
        return False
    return _KEY_ENV in getattr(cls, "config_keys", frozenset())


def adapter_options(doc: Document, path: Path, adapter: str, raw: object) -> AdapterOptions | None:
    """The options of ``adapter`` at ``path``: the adapter's own settings and the names
    of the variables it is given; ``None`` when they hold a problem."""
    before = len(doc.problems)
    body = mapping(doc, path, raw, f"settings of adapter {adapter!r}")
    config: dict[str, Any] = {}
    env: dict[str, Any] = {}
    for key, value in (body or {}).items():
        field = ADAPTER_OPTION_FIELDS.get(key)
        if field is not None:
            for sub, reason in check(field, value):
                doc.problem((*path, key, *sub), reason)
            env[key] = tuple(value) if isinstance(value, list) else value
        elif _SECRET_KEY.match(key.lower()):
            doc.problem((*path, key), _secret_reason(key))
        else:
            config[key] = value
    if body is None or len(doc.problems) > before:
        return None
    if env.get(_KEY_ENV) and reads_key_env(adapter):
        # The agent gets the key under the variable's own name; the adapter must know it.
        config[_KEY_ENV] = env[_KEY_ENV]
    return AdapterOptions(adapter=adapter, config=config, **env)


def _where_path(where: str | None) -> Path:
    """``"config.scenario.attempts[0][1].sleep"`` → ``("scenario", "attempts", "[0]", …)``."""
    text = (where or "").removeprefix("config").lstrip(".")
    parts: list[str] = []
    for piece in filter(None, text.split(".")):
        head = _INDEX.split(piece, maxsplit=1)[0]
        if head:
            parts.append(head)
        parts.extend(_INDEX.findall(piece))
    return tuple(parts)


def check_adapter_settings(
    doc: Document, options: AdapterOptions, *, at: Path, given: bool
) -> None:
    """Let an available adapter check its own settings; its ``ConfigError`` becomes a
    problem at the key it names under ``at`` (where the options are). When the options
    were not ``given``, ``at`` is where the adapter is named, and the problem says where
    its settings go."""
    name = options.adapter
    if name not in adapter_names():
        return
    try:
        adapter = get_adapter(name)
    except ConfigError as err:  # a broken third-party entry point
        doc.problem(at, err.reason)
        return
    try:
        check_settings(options.config, adapter=adapter)
    except ConfigError as err:
        key = _where_path(err.where)
        if given:
            doc.problem((*at, *key), err.reason)
        else:
            doc.problem(
                at,
                f"adapter {name!r} needs settings under adapters.{name}: "
                f"{format_path(key) or 'its settings'}: {err.reason}",
            )
