"""``backstay._version``: the version found without importing ``importlib.metadata`` is the
one ``importlib.metadata`` finds, and where the two lookups could differ the short one
gives way (``None``) to ``importlib.metadata``."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from backstay import _version

PLAIN = "Metadata-Version: 2.1\nName: backstay\nVersion: 9.9.9\nSummary: x\n\nVersion: 1.0\n"
# METADATA texts the short lookup reads itself: the same value importlib.metadata reads.
READ = {
    "plain": PLAIN,
    "crlf": PLAIN.replace("\n", "\r\n"),
    "lower-case name, blanks around": "Name: backstay\nversion: \t 2.0rc1  \nSummary: s\n",
    "first of two": "Name: backstay\nVersion: 3.0\nVersion: 4.0\n",
    "no body": "Name: backstay\nVersion: 5.0",
}
# Texts it leaves to importlib.metadata.
LEFT = {
    "folded": "Name: backstay\nVersion: 6.0\n  .1\n",
    "not a header first": "garbage line\nVersion: 7.0\n",
    "blank in a name": "Name: backstay\nSome Thing: x\nVersion: 8.0\n",
    "no version": "Name: backstay\n\nVersion: 1.0\n",
    "empty": "",
}


def _dist(root: Path, dirname: str, metadata: str) -> Path:
    info = root / dirname
    info.mkdir(parents=True)
    (info / "METADATA").write_bytes(metadata.encode("utf-8"))
    return root


def _importlib_version(paths: list[str]) -> str | None:
    found = importlib.metadata.Distribution.discover(name="backstay", path=paths)
    dist = next(iter(found), None)
    return None if dist is None else dist.metadata["Version"]


def test_the_installed_version_is_importlib_metadatas() -> None:
    found = _version._from_path()
    assert found is not None  # read without importlib.metadata in this environment
    assert found == importlib.metadata.version("backstay")


def test_the_entry_point_prints_the_same_version() -> None:
    script = Path(sys.executable).with_name("backstay")
    done = subprocess.run(
        [str(script), "--version"], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout == f"backstay {importlib.metadata.version('backstay')}\n"


@pytest.mark.parametrize("text", list(READ.values()), ids=list(READ))
def test_a_metadata_file_reads_as_importlib_metadata_reads_it(tmp_path: Path, text: str) -> None:
    paths = [str(_dist(tmp_path, "backstay-0.dist-info", text))]
    found = _version._from_path(paths)
    assert found is not None
    assert found == _importlib_version(paths)


@pytest.mark.parametrize("text", list(LEFT.values()), ids=list(LEFT))
def test_a_metadata_file_read_otherwise_is_left_to_importlib_metadata(
    tmp_path: Path, text: str
) -> None:
    assert _version._from_path([str(_dist(tmp_path, "backstay-0.dist-info", text))]) is None


def test_the_first_entry_holding_the_distribution_is_read(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    first = _dist(tmp_path / "a", "Backstay-1.dist-info", "Name: backstay\nVersion: 1.0\n")
    _dist(tmp_path / "b", "backstay-2.dist-info", "Name: backstay\nVersion: 2.0\n")
    _dist(tmp_path / "a", "backstay_extra-3.dist-info", "Name: backstay-extra\nVersion: 3\n")
    paths = [str(tmp_path / "missing"), str(empty), str(first), str(tmp_path / "b")]
    assert _version._from_path(paths) == _importlib_version(paths) == "1.0"


def test_nothing_found_is_left_to_importlib_metadata(tmp_path: Path) -> None:
    assert _version._from_path([str(tmp_path)]) is None


def test_a_zip_or_an_egg_on_the_path_is_left_to_importlib_metadata(tmp_path: Path) -> None:
    archive = tmp_path / "dists.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("backstay-9.dist-info/METADATA", "Name: backstay\nVersion: 9\n")
    later = str(_dist(tmp_path / "later", "backstay-1.dist-info", PLAIN))
    assert _importlib_version([str(archive), later]) == "9"  # the zip comes first
    assert _version._from_path([str(archive), later]) is None
    egg = tmp_path / "backstay-1.egg"
    (egg / "EGG-INFO").mkdir(parents=True)
    assert _version._from_path([str(egg), later]) is None


def test_an_egg_info_is_left_to_importlib_metadata(tmp_path: Path) -> None:
    root = _dist(tmp_path, "backstay-1.egg-info", "Name: backstay\nVersion: 1\n")
    assert _version._from_path([str(root)]) is None


def test_another_finder_of_distributions_is_left_to_importlib_metadata(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Finder:
        @staticmethod
        def find_distributions(*_args: object, **_kwargs: object) -> list[object]:
            return []

    monkeypatch.setattr(sys, "meta_path", [Finder(), *sys.meta_path])
    assert _version._from_path([str(_dist(tmp_path, "backstay-1.dist-info", PLAIN))]) is None
