"""Where backstay keeps the agent CLIs it installs: the managed directory.

In order: the directory given explicitly (``--dir``), ``$BACKSTAY_AGENTS_DIR``,
``$XDG_CACHE_HOME/backstay/agents``, ``~/.cache/backstay/agents``. Each CLI gets its own
folder inside (``claude-code/``, ``aider/`` …); ``logs/`` keeps the last install's output
of each, ``.locks/`` the locks that let two installers run at once safely.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from backstay.errors import ConfigError

__all__ = ["AGENTS_DIR_ENV_VAR", "agents_dir"]

AGENTS_DIR_ENV_VAR: Final = "BACKSTAY_AGENTS_DIR"


def _absolute(value: str | os.PathLike[str], where: str, environ: Mapping[str, str]) -> Path:
    text = os.fspath(value)
    if not text.strip():
        raise ConfigError("must be a directory path, got an empty string", where=where)
    path = Path(text)
    if text == "~" or text.startswith("~/"):
        home = environ.get("HOME")
        if not home:
            raise ConfigError(f"{text!r} starts with ~ but HOME is not set", where=where)
        path = Path(home) / text[2:]
    path = path.absolute()
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{path} exists and is not a directory", where=where)
    return path


def agents_dir(
    explicit: str | os.PathLike[str] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
) -> Path:
    """The managed directory (absolute; not created). ``environ`` defaults to this
    process's environment. ``ConfigError`` names the flag or variable that gave an
    unusable path."""
    env = os.environ if environ is None else environ
    if explicit is not None:
        return _absolute(explicit, "--dir", env)
    named = env.get(AGENTS_DIR_ENV_VAR)
    if named is not None:
        return _absolute(named, AGENTS_DIR_ENV_VAR, env)
    cache = env.get("XDG_CACHE_HOME", "")
    if cache and Path(cache).is_absolute():  # the XDG spec ignores relative values
        return _absolute(Path(cache) / "backstay" / "agents", "XDG_CACHE_HOME", env)
    home = env.get("HOME")
    if not home:
        raise ConfigError(
            f"cannot place the agents directory: set {AGENTS_DIR_ENV_VAR}, XDG_CACHE_HOME "
            "or HOME, or pass --dir",
            where="agents directory",
        )
    return _absolute(Path(home) / ".cache" / "backstay" / "agents", "HOME", env)
