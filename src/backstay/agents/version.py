"""What version an installed CLI is: ``<binary> --version``, run briefly and remembered.

The probe runs in a throw-away ``HOME`` (so no CLI writes into the user's), with stdin
closed, ``PATH`` from the caller's environment (npm's launchers need ``node``), the CLI's
``offline_env`` switches, and ``VERSION_TIMEOUT_S`` before its process group is killed.
A version read is remembered per binary (its resolved path, inode, size and modification
time), so a binary that changes is probed again and one that does not is probed once.
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from backstay.agents import _exec
from backstay.agents.catalog import CliSpec
from backstay.errors import ConfigError
from backstay.redact import redact

__all__ = ["VERSION_TIMEOUT_S", "detect_version", "forget_versions"]

# Aider, the slowest, starts in ~4 s on two busy cores; the others in under 3 s.
VERSION_TIMEOUT_S: Final = 30.0
_QUOTE_CHARS: Final = 300

_Key = tuple[str, int, int, int]
_cache: dict[_Key, str] = {}
_cache_lock = threading.Lock()


def _key(path: Path) -> _Key:
    resolved = path.resolve()
    stat = resolved.stat()
    return (str(resolved), stat.st_ino, stat.st_size, stat.st_mtime_ns)


def _probe_env(spec: CliSpec, home: str, environ: Mapping[str, str]) -> dict[str, str]:
    return {
        "PATH": environ.get("PATH", os.defpath),
        "HOME": home,
        "TMPDIR": home,
        "XDG_CONFIG_HOME": f"{home}/.config",
        "XDG_CACHE_HOME": f"{home}/.cache",
        "XDG_DATA_HOME": f"{home}/.local/share",
        "XDG_STATE_HOME": f"{home}/.local/state",
        "LANG": "C.UTF-8",
        "NO_COLOR": "1",
        **spec.offline_env,
    }


def detect_version(
    path: Path,
    spec: CliSpec,
    *,
    timeout_s: float = VERSION_TIMEOUT_S,
    environ: Mapping[str, str] | None = None,
) -> str:
    """The version ``path --version`` reports, e.g. ``"2.1.197"``.

    ``ConfigError`` (``where`` is the CLI's name) when the binary is missing, cannot be
    run, fails, hangs past ``timeout_s``, or prints no version; the message quotes what it
    printed (redacted)."""
    where = spec.name
    try:
        key = _key(path)
    except OSError as exc:
        raise ConfigError(f"{path} cannot be read: {exc.strerror or exc}", where=where) from None
    with _cache_lock:
        known = _cache.get(key)
    if known is not None:
        return known
    env = os.environ if environ is None else environ
    with tempfile.TemporaryDirectory(prefix="backstay-version-") as home:
        try:
            finished = _exec.run(
                [str(path), "--version"],
                env=_probe_env(spec, home, env),
                timeout_s=timeout_s,
                cwd=Path(home),
            )
        except OSError as exc:
            raise ConfigError(f"{path} cannot be run: {exc.strerror or exc}", where=where) from None
    said = redact(finished.tail.strip())[-_QUOTE_CHARS:]
    if finished.returncode is None:
        raise ConfigError(f"`{path} --version` did not finish within {timeout_s:g} s", where=where)
    version = spec.parse_version(finished.tail) if finished.ok else None
    if version is None:
        raise ConfigError(
            f"`{path} --version` exited {finished.returncode} without a version: {said!r}",
            where=where,
        )
    with _cache_lock:
        _cache[key] = version
    return version


def forget_versions() -> None:
    """Forget every remembered version (the next ``detect_version`` probes again)."""
    with _cache_lock:
        _cache.clear()
