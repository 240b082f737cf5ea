"""The demo's files, shipped in this package, and the environment its suite reads.

The suite names its keys and base URLs by the providers' usual variables
(``ANTHROPIC_API_KEY`` / ``ANTHROPIC_BASE_URL``, ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL``,
``GEMINI_API_KEY`` / ``GOOGLE_GEMINI_BASE_URL``), so the same file runs against the real
services with nothing but the keys exported. Against the fake provider the demo builds
those variables itself (``demo_environ``) and never reads the process's own: a real key
in the environment is never sent anywhere by the demo.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Final

from backstay.errors import ConfigError

__all__ = [
    "CONFIG_FILE",
    "DEMO_FILES",
    "SCENARIO_FILE",
    "SUITE_FILE",
    "demo_environ",
    "demo_file",
    "export",
]

SUITE_FILE: Final = "suite.yaml"
SCENARIO_FILE: Final = "scenario.yaml"
CONFIG_FILE: Final = "backstay.yaml"
DEMO_FILES: Final = (SUITE_FILE, CONFIG_FILE, SCENARIO_FILE)
_HERE: Final = Path(__file__).parent


def demo_file(name: str) -> Path:
    """The path of the shipped demo file ``name`` (one of ``DEMO_FILES``)."""
    if name not in DEMO_FILES:
        raise ConfigError(f"no demo file {name!r}; there are {', '.join(DEMO_FILES)}", where="name")
    return _HERE / name


def export(folder: str | os.PathLike[str]) -> list[Path]:
    """Copy the demo files into ``folder`` (created when missing); the paths written.
    A file already there is never overwritten: ``ConfigError`` naming it, nothing copied."""
    target = Path(folder)
    if target.exists() and not target.is_dir():
        raise ConfigError(f"{target} is not a folder", where="--export")
    taken = [target / name for name in DEMO_FILES if (target / name).exists()]
    if taken:
        raise ConfigError(
            f"{taken[0]} exists already; the demo files are never written over it",
            where="--export",
        )
    target.mkdir(parents=True, exist_ok=True)
    return [Path(shutil.copyfile(demo_file(name), target / name)) for name in DEMO_FILES]


def demo_environ(url: str, key: str) -> dict[str, str]:
    """The variables the demo suite reads, pointing every adapter at the fake provider at
    ``url`` with the API key ``key``."""
    return {
        "ANTHROPIC_API_KEY": key,
        "ANTHROPIC_BASE_URL": url,
        "OPENAI_API_KEY": key,
        "OPENAI_BASE_URL": f"{url}/v1",
        "GEMINI_API_KEY": key,
        "GOOGLE_GEMINI_BASE_URL": url,
    }
