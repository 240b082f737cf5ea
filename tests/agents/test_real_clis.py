"""The real CLIs that `make agents` installs into the managed directory: each reports its
pinned version and is what locate() finds. Skipped, with the reason, for a CLI that could
not be installed on this machine."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from backstay.agents import CLIS, CliSpec, Source, agents_dir, detect_version, locate
from backstay.agents.install import current_install
from backstay.agents.version import forget_versions


def installed(spec: CliSpec) -> Path:
    root = agents_dir()
    manifest, reason = current_install(spec, root)
    if manifest is None:
        pytest.skip(f"{spec.name} is not installed in {root} ({reason}): run `make agents`")
    return manifest.binary_path


@pytest.mark.parametrize("spec", CLIS.values(), ids=list(CLIS))
def test_the_installed_cli_reports_its_pinned_version(spec: CliSpec) -> None:
    binary = installed(spec)
    forget_versions()
    assert detect_version(binary, spec) == spec.pinned


@pytest.mark.parametrize("spec", CLIS.values(), ids=list(CLIS))
def test_locate_finds_the_managed_install(spec: CliSpec) -> None:
    binary = installed(spec)
    # A PATH without the CLI: what is found comes from the managed directory.
    found = locate(spec.name, environ={**os.environ, "PATH": "/usr/bin:/bin"})
    assert (found.path, found.version, found.source) == (binary, spec.pinned, Source.MANAGED)


def test_aiders_price_list_is_seeded_from_its_own_litellm(tmp_path: Path) -> None:
    installed(CLIS["aider"])
    found = locate("aider")
    found.seed_home(tmp_path)
    prices = tmp_path / ".aider" / "caches" / "model_prices_and_context_window.json"
    table = json.loads(prices.read_text())
    assert len(table) > 100
