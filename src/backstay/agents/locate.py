"""Finding the binary of an agent CLI an adapter runs, at a version the adapter knows.

``locate`` looks, in order, at:

1. the configured path (an adapter setting): if one is given, it is the only candidate;
2. the managed directory (``backstay agents install``): its manifest says the version,
   so an intact managed install is found without starting the CLI;
3. ``PATH``.

The first candidate whose version is supported wins. When none is, ``ConfigError`` lists
what was found where and says how to install a supported version
(``backstay agents install claude-code``).
"""

from __future__ import annotations

import dataclasses
import enum
import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from backstay.agents.catalog import CliSpec, cli_spec
from backstay.agents.dirs import agents_dir as managed_dir
from backstay.agents.home import seed_files, seed_home
from backstay.agents.install import binary_in
from backstay.agents.manifest import read_manifest
from backstay.agents.version import detect_version
from backstay.errors import ConfigError

__all__ = ["Located", "Source", "locate"]


class Source(enum.StrEnum):
    """Where a located binary came from."""

    CONFIGURED = "configured"
    MANAGED = "managed"
    PATH = "PATH"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Located:
    """A CLI binary and the version it reported; ``spec`` is its catalogue entry."""

    spec: CliSpec
    path: Path
    version: str
    source: Source

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def offline_env(self) -> Mapping[str, str]:
        """Variables that keep the CLI from reaching the network on its own."""
        return self.spec.offline_env

    def seed_home(self, home: Path) -> None:
        """Copy into a run's private ``home`` the files the CLI would otherwise fetch
        (``CliSpec.home_seed``); ``ConfigError`` when the installation lacks one."""
        seed_home(seed_files(self.spec, self.path), home)


def _supported_versions(spec: CliSpec, supported: Sequence[str] | None) -> tuple[str, ...]:
    if supported is None:
        return spec.supported
    if isinstance(supported, str) or not supported:
        raise ConfigError("must be a non-empty list of versions", where="supported")
    return tuple(supported)


def check_configured(
    spec: CliSpec,
    configured_path: str | os.PathLike[str],
    versions: tuple[str, ...],
    where: str,
    environ: Mapping[str, str],
) -> Located:
    path = Path(os.fspath(configured_path)).expanduser()
    if not path.is_file() or not os.access(path, os.X_OK):
        raise ConfigError(
            f"{path} is not an executable file; fix the path or remove it to use the CLI "
            f"installed by `{spec.install_hint}`",
            where=where,
        )
    try:
        version = detect_version(path, spec, environ=environ)
    except ConfigError as err:
        raise ConfigError(err.reason, where=where) from None
    if version not in versions:
        raise ConfigError(
            f"{path} is {spec.name} {version}, which backstay does not support "
            f"(supported: {', '.join(versions)}): point it at a supported version, or remove "
            f"it and run `{spec.install_hint}`",
            where=where,
        )
    return Located(spec=spec, path=path, version=version, source=Source.CONFIGURED)


def _managed(spec: CliSpec, root: Path, environ: Mapping[str, str]) -> tuple[Located | None, str]:
    folder = root / spec.name
    manifest = read_manifest(folder)
    if manifest is None:
        if binary_in(spec, folder).exists():
            return None, f"{folder}: unfinished or failed install"
        return None, f"{folder}: not installed"
    path = manifest.binary_path
    if manifest.intact():
        return Located(spec=spec, path=path, version=manifest.version, source=Source.MANAGED), ""
    try:
        version = detect_version(path, spec, environ=environ)
    except ConfigError as err:
        return None, f"{folder}: broken ({err.reason})"
    return Located(spec=spec, path=path, version=version, source=Source.MANAGED), ""


def _on_path(
    spec: CliSpec, environ: Mapping[str, str], skip: Path | None
) -> tuple[Located | None, str]:
    found = shutil.which(spec.binary, path=environ.get("PATH", os.defpath))
    if found is None:
        return None, f"PATH: no {spec.binary}"
    path = Path(found)
    if skip is not None and path.resolve() == skip.resolve():
        return None, f"PATH: {path} is the managed install"
    try:
        version = detect_version(path, spec, environ=environ)
    except ConfigError as err:
        return None, f"PATH: {err.reason}"
    return Located(spec=spec, path=path, version=version, source=Source.PATH), ""


def candidates(
    spec: CliSpec, *, root: Path, environ: Mapping[str, str]
) -> list[tuple[Located | None, str]]:
    """What the managed directory and ``PATH`` hold: a located binary, or why there is none."""
    managed = _managed(spec, root, environ)
    skip = managed[0].path if managed[0] is not None else None
    return [managed, _on_path(spec, environ, skip)]


def locate(
    name: str,
    configured_path: str | os.PathLike[str] | None = None,
    *,
    supported: Sequence[str] | None = None,
    agents_dir: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
    where: str | None = None,
) -> Located:
    """The binary of the agent CLI ``name`` at a supported version (see the module
    docstring). ``supported`` narrows the versions accepted (default: the catalogue's);
    ``agents_dir`` overrides the managed directory; ``environ`` (default: this process's)
    gives ``PATH`` and the directory's variables; ``where`` names the setting that gave
    ``configured_path`` in errors (default: the CLI's name).
    """
    spec = cli_spec(name)
    versions = _supported_versions(spec, supported)
    env = os.environ if environ is None else environ
    if configured_path is not None:
        return check_configured(spec, configured_path, versions, where or name, env)
    root = managed_dir(agents_dir, environ=env)
    notes = []
    for located, note in candidates(spec, root=root, environ=env):
        if located is not None and located.version in versions:
            return located
        if located is not None:
            notes.append(f"{located.source}: {located.path} is {located.version}, not supported")
        else:
            notes.append(note)
    raise ConfigError(
        f"no supported {spec.binary} ({', '.join(versions)}) found — {'; '.join(notes)}. "
        f"Install it with `{spec.install_hint}`",
        where=where or name,
    )
