"""Where each known agent CLI stands (``backstay agents list``): the versions backstay
supports, what the managed directory holds, and which binary an adapter would run."""

from __future__ import annotations

import dataclasses
import enum
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from backstay.agents.catalog import CliSpec
from backstay.agents.locate import Located, candidates, check_configured
from backstay.agents.manifest import read_manifest
from backstay.errors import ConfigError

__all__ = ["CliState", "CliStatus", "cli_status"]


class CliState(enum.StrEnum):
    """``ok``: a supported version would run. ``missing``: nothing found. ``unsupported``:
    only versions backstay does not know. ``broken``: a binary that does not run or an
    unfinished install, and nothing usable besides."""

    OK = "ok"
    MISSING = "missing"
    UNSUPPORTED = "unsupported"
    BROKEN = "broken"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CliStatus:
    """One CLI: ``managed_version`` is what the managed directory recorded (``None``: no
    finished install); ``located`` is the binary an adapter would run (``ok``) or the
    unsupported one found; ``notes`` say what was found where."""

    spec: CliSpec
    state: CliState
    managed_version: str | None
    located: Located | None
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        located = self.located
        return {
            "name": self.spec.name,
            "package": self.spec.package,
            "kind": str(self.spec.kind),
            "pinned": self.spec.pinned,
            "supported": list(self.spec.supported),
            "managed_version": self.managed_version,
            "status": str(self.state),
            "version": located.version if located else None,
            "source": str(located.source) if located else None,
            "path": str(located.path) if located else None,
            "notes": list(self.notes),
        }


def cli_status(
    spec: CliSpec,
    *,
    root: Path,
    configured_path: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> CliStatus:
    """Where ``spec`` stands, looking where ``locate`` looks (it starts a CLI found only
    on ``PATH`` or in a changed managed install to read its version)."""
    env = os.environ if environ is None else environ
    manifest = read_manifest(root / spec.name)
    managed_version = manifest.version if manifest is not None else None
    if configured_path is not None:
        try:
            chosen = check_configured(
                spec, configured_path, spec.supported, f"--binary {spec.name}", env
            )
        except ConfigError as err:
            return CliStatus(
                spec=spec,
                state=CliState.BROKEN,
                managed_version=managed_version,
                located=None,
                notes=(f"configured: {err.reason}",),
            )
        return CliStatus(
            spec=spec, state=CliState.OK, managed_version=managed_version, located=chosen
        )
    notes: list[str] = []
    unsupported: Located | None = None
    broken = False
    for located, note in candidates(spec, root=root, environ=env):
        if located is not None and located.version in spec.supported:
            return CliStatus(
                spec=spec,
                state=CliState.OK,
                managed_version=managed_version,
                located=located,
                notes=tuple(notes),
            )
        if located is not None:
            unsupported = unsupported or located
            notes.append(f"{located.source}: {located.path} is {located.version}")
        else:
            broken = broken or "broken" in note or "unfinished or failed" in note
            notes.append(note)
    if unsupported is not None:
        state = CliState.UNSUPPORTED
    else:
        state = CliState.BROKEN if broken else CliState.MISSING
    return CliStatus(
        spec=spec,
        state=state,
        managed_version=managed_version,
        located=unsupported,
        notes=tuple(notes),
    )
