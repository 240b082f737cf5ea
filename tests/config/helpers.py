"""Writing configuration files and reading the problems a strict load reports."""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

from backstay import ConfigError
from backstay.config import BackstayConfig, load_config


def write(directory: Path, text: str, name: str = "backstay.yaml") -> Path:
    path = directory / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def load(
    path: Path | None,
    *,
    environ: Mapping[str, str] | None = None,
    overrides: Iterable[str] = (),
) -> BackstayConfig:
    """A strict load that ignores the real environment unless ``environ`` is given."""
    return load_config(path, environ=environ or {}, overrides=overrides)


def problems(
    path: Path | None,
    *,
    environ: Mapping[str, str] | None = None,
    overrides: Iterable[str] = (),
) -> list[str]:
    """Every problem line of the ``ConfigError`` a strict load raises."""
    with pytest.raises(ConfigError) as info:
        load(path, environ=environ, overrides=overrides)
    text = str(info.value)
    head, sep, rest = text.partition(" problems:\n")
    if not sep:
        return [text]
    lines = [line.strip() for line in rest.splitlines()]
    assert int(head.rpartition(": ")[2]) == len(lines)
    return lines
