"""The manifest: written atomically, read back, unreadable means not installed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from backstay.agents.manifest import MANIFEST_FILE, read_manifest, write_manifest


@pytest.fixture
def binary(tmp_path: Path) -> Path:
    path = tmp_path / "cli" / "bin" / "tool"
    path.parent.mkdir(parents=True)
    path.write_text("#!/bin/sh\n")
    return path


def test_a_written_manifest_reads_back(tmp_path: Path, binary: Path) -> None:
    written = write_manifest(
        tmp_path / "cli", name="tool", package="tool-pkg", version="1.2.3", binary=binary
    )
    assert read_manifest(tmp_path / "cli") == written
    assert written.binary == "bin/tool"
    assert written.binary_path == binary
    assert written.intact()
    assert sorted(os.listdir(tmp_path / "cli")) == sorted(["bin", MANIFEST_FILE])


def test_a_changed_binary_is_no_longer_intact(tmp_path: Path, binary: Path) -> None:
    manifest = write_manifest(
        tmp_path / "cli", name="t", package="t", version="1.0.0", binary=binary
    )
    binary.write_text("#!/bin/sh\necho changed\n")
    assert not manifest.intact()
    binary.unlink()
    assert not manifest.intact()


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "[]",
        '{"format": 2}',
        '{"format": 1, "name": "t"}',
        json.dumps(
            {
                "format": 1,
                "name": "t",
                "package": "t",
                "version": "1",
                "binary": "../../etc/passwd",
                "binary_size": 1,
                "binary_mtime_ns": 1,
                "installed_at": "x",
            }
        ),
    ],
)
def test_an_unreadable_manifest_reads_as_none(tmp_path: Path, text: str) -> None:
    (tmp_path / MANIFEST_FILE).write_text(text)
    assert read_manifest(tmp_path) is None


def test_no_manifest_reads_as_none(tmp_path: Path) -> None:
    assert read_manifest(tmp_path) is None
