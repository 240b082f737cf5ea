"""``__version__``: the installed distribution's version (``0.0.0`` from a source tree
without an install), read on first use. A module of its own, so that the readers of a
batch (``observe``) need not import the package root for it.

``importlib.metadata`` costs about 0.04 s of CPU to import (``email``, ``zipfile``,
``csv``…), more than ``backstay --version`` and ``health --json`` spend on anything
else of their own. ``_from_path`` finds the version as it does, without importing it: the
first ``backstay-*.dist-info`` directory of the first ``sys.path`` entry that has one,
its ``METADATA``'s ``Version`` header. Wherever the lookup could differ from
``importlib.metadata``'s (another finder of distributions on ``sys.meta_path``, a zip
file or an ``.egg`` on ``sys.path``, an ``.egg-info``, a ``METADATA`` it cannot read or
parse simply), it gives ``None`` and ``importlib.metadata`` is asked
(``tests/test_version.py`` holds the two alike).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    __version__: str

__all__ = ["__version__"]

_NAME: Final = "backstay"


def _version() -> str:
    found = _from_path()
    if found is not None:
        return found
    from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415 - costly

    try:
        return version(_NAME)
    except PackageNotFoundError:  # running from a source tree without an install
        return "0.0.0"


def _from_path(paths: list[str] | None = None) -> str | None:
    """The version ``importlib.metadata.version("backstay")`` gives, found in ``paths``
    (default ``sys.path``) as it finds it; ``None`` where that lookup is not this simple
    one, or nothing is found (the caller then asks ``importlib.metadata``)."""
    from importlib.machinery import PathFinder  # noqa: PLC0415 - already loaded at start-up

    for finder in sys.meta_path:
        if finder is not PathFinder and hasattr(finder, "find_distributions"):
            return None  # another finder may answer first
    for entry in sys.path if paths is None else paths:
        root = entry or "."
        if root.lower().endswith(".egg"):
            return None  # an egg's EGG-INFO: importlib.metadata's own rule
        try:
            children = os.listdir(root)
        except OSError:
            if os.path.exists(root):
                return None  # a zip file (or unreadable): importlib.metadata reads those
            continue
        for child in children:
            low = child.lower()
            if not low.endswith((".dist-info", ".egg-info")):
                continue
            if low.rpartition(".")[0].partition("-")[0] != _NAME:
                continue  # another distribution (backstay's name needs no normalising)
            if not low.endswith(".dist-info"):
                return None
            return _metadata_version(os.path.join(root, child, "METADATA"))
    return None


def _metadata_version(path: str) -> str | None:
    """The ``Version`` header of the ``METADATA`` file ``path`` as the ``email`` parser
    reads it (the first one; leading blanks taken off), or ``None`` where its headers are
    not plain ``Name: value`` lines."""
    try:
        with open(path, encoding="utf-8", newline="") as file:
            text = file.read()
    except (OSError, UnicodeDecodeError):
        return None
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    for i, line in enumerate(lines):
        if not line:
            break  # the end of the headers
        name, colon, value = line.partition(":")
        if not colon or not name or not all("!" <= c <= "~" for c in name):
            return None  # not a header line: the parser's own reading
        if name.lower() == "version":
            more = lines[i + 1] if i + 1 < len(lines) else ""
            if more[:1] in (" ", "\t"):
                return None  # a folded header: the parser's to read
            return value.lstrip(" \t")
    return None


def __getattr__(name: str) -> Any:
    if name == "__version__":
        globals()[name] = value = _version()
        return value
    raise AttributeError(f"module 'backstay._version' has no attribute {name!r}")
