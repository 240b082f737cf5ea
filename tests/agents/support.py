"""Helpers of the agents tests: small real programs standing in for CLI binaries, and
managed installs of them with real manifests."""

from __future__ import annotations

import shlex
from pathlib import Path

from backstay.agents import CliSpec
from backstay.agents.install import binary_in
from backstay.agents.manifest import write_manifest


def program(path: Path, prints: str, *, code: int = 0, runs: Path | None = None) -> Path:
    """An executable at ``path`` printing ``prints`` and exiting ``code``; each run appends
    a line to ``runs`` (when given) and its ``$HOME`` is printed to stderr."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = ["#!/bin/sh"]
    if runs is not None:
        lines.append(f"echo run >> {shlex.quote(str(runs))}")
    lines += [f"echo {shlex.quote(prints)}", 'echo "home=$HOME" >&2', f"exit {code}"]
    path.write_text("\n".join(lines) + "\n")
    path.chmod(0o755)
    return path


def managed(
    root: Path, spec: CliSpec, version: str, *, prints: str | None = None, runs: Path | None = None
) -> Path:
    """A finished managed install of ``spec`` at ``version`` (a program and its manifest)."""
    folder = root / spec.name
    binary = program(binary_in(spec, folder), prints or version, runs=runs)
    write_manifest(folder, name=spec.name, package=spec.package, version=version, binary=binary)
    return binary


def runs_of(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0
