"""The store in force for a command on a batch (``--store``, ``$BACKSTAY_STORE``,
``batch.json``, the configuration, else SQLite in ``--state-dir``), found without typer:
``health --json``'s short path (``cli._health_probe``) uses it before any command line is
built, and ``cli._state`` re-exports it to the commands."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING, Final

from backstay.engine.suite_batch import BATCH_FILE, read_identity
from backstay.errors import ConfigError
from backstay.store.location import (
    STORE_ENV_VAR,
    StoreLocation,
    StoreUnavailable,
    parse_store,
    resolve_store,
)

if TYPE_CHECKING:
    from backstay.config import BackstayConfig

__all__ = [
    "CONFIG_ENV_PREFIX",
    "CONFIG_ENV_VAR",
    "CONFIG_FILES",
    "MASK",
    "STATE_DIR_ENV_VAR",
    "configured",
    "from_batch_file",
    "store_location",
]

# Where --state-dir is read from when the flag is not given.
STATE_DIR_ENV_VAR: Final = "BACKSTAY_STATE_DIR"
# In a store recorded in batch.json, a password that was left out.
MASK: Final = ":***@"


def from_batch_file(state_dir: Path) -> StoreLocation | None:
    """The store ``state_dir``'s ``batch.json`` names, if any; a ``ConfigError`` when it
    needs the password that was left out of it."""
    identity = read_identity(state_dir) if state_dir.is_dir() else None
    if identity is None or not identity.store:
        return None
    where = f"{state_dir / BATCH_FILE}: store"
    if MASK in identity.store:
        raise ConfigError(
            f"the batch is recorded in {identity.store}, whose password is never kept: give "
            f"the URL with it (--store URL, or ${STORE_ENV_VAR})",
            where=where,
        )
    return parse_store(identity.store, where=where)


# What ``load_config`` reads, besides ``--set``: the file ``$BACKSTAY_CONFIG`` names, else
# the first of these in the working directory, and every ``BACKSTAY__*`` variable
# (``backstay.config``: ``CONFIG_ENV_VAR``, ``DEFAULT_CONFIG_FILE``, ``AGENT_CONFIG_FILE``,
# ``CONTRACT_DEFAULTS_FILE``, ``ENV_PREFIX``; tests/cli/test_startup.py holds them alike).
CONFIG_ENV_VAR: Final = "BACKSTAY_CONFIG"
CONFIG_FILES: Final = ("backstay.yaml", "agent/config.yml", "config/defaults.yaml")
CONFIG_ENV_PREFIX: Final = "BACKSTAY__"


def configured(sets: list[str] | None) -> bool:
    """Whether ``load_config(overrides=sets)`` has anything to read. When not, it would
    give the defaults (no ``store:``), and a command that only needs the store in force
    (``health``, ``status``) does not import the configuration's models to learn that."""
    return bool(
        sets
        or os.environ.get(CONFIG_ENV_VAR, "").strip()
        or any(name.upper().startswith(CONFIG_ENV_PREFIX) for name in os.environ)
        or any(Path(name).is_file() for name in CONFIG_FILES)
    )


def store_location(
    flag: str | None,
    state_dir: Path,
    *,
    config: BackstayConfig | None = None,
    sets: list[str] | None = None,
) -> StoreLocation:
    """The store in force: ``--store``, ``$BACKSTAY_STORE``, the store ``batch.json`` of
    ``state_dir`` records, ``store:`` of ``config`` (or of the ``backstay.yaml`` found
    with the ``--set`` overrides ``sets``, read only when none of those is given), or
    SQLite in ``state_dir``."""
    if not flag and not os.environ.get(STORE_ENV_VAR):
        recorded = from_batch_file(state_dir)
        if recorded is not None:
            unavailable = "stop" if config is None else config.store_unavailable
            return dataclasses.replace(recorded, unavailable=StoreUnavailable(unavailable))
    if config is None and not flag and not os.environ.get(STORE_ENV_VAR) and configured(sets):
        from backstay.config import load_config  # noqa: PLC0415 - see the imports

        config = load_config(overrides=sets or [])
    return resolve_store(
        flag,
        state_dir=state_dir,
        config=None if config is None else config.store,
        unavailable="stop" if config is None else config.store_unavailable,
    )
