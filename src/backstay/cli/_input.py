"""Turning command-line text into library input, with errors that name the flag."""

from __future__ import annotations

import builtins
import contextlib
import importlib
import re
import sys
from pathlib import Path

from backstay.errors import ConfigError

_MAX_FILE_BYTES = 50 * 1024 * 1024


def read_value(value: str, *, flag: str) -> str:
    """``value`` itself, or the contents of the file named after ``@`` (``@-`` is stdin)."""
    if not value.startswith("@"):
        return value
    name = value[1:]
    if name == "-":
        return sys.stdin.read()
    path = Path(name)
    if not path.is_file():
        raise ConfigError(f"no such file: {name}", where=flag)
    if path.stat().st_size > _MAX_FILE_BYTES:
        raise ConfigError(
            f"file larger than {_MAX_FILE_BYTES // (1024 * 1024)} MiB: {name}", where=flag
        )
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError as err:
        raise ConfigError(f"cannot read {name}: {err.strerror}", where=flag) from None


def parse_headers(values: list[str]) -> dict[str, str]:
    """``["retry-after: 30", …]`` → ``{"retry-after": "30", …}``."""
    headers: dict[str, str] = {}
    for raw in values:
        name, sep, value = raw.partition(":")
        if not sep or not name.strip():
            raise ConfigError(f"expected 'Name: value', got {raw!r}", where="--header")
        headers[name.strip()] = value.strip()
    return headers


_DOTTED = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*$")


def build_exception(spec: str, *, status: int | None) -> BaseException:
    """An exception from ``'module.Class'`` or ``'module.Class: message'``.

    The real class is used when it is importable and constructible from a message;
    otherwise a stand-in with the same module and name (classification reads names).
    """
    name, _, message = spec.partition(":")
    name = name.strip()
    message = message.strip()
    if not _DOTTED.match(name):
        raise ConfigError(
            f"expected a dotted class name like httpx.ReadTimeout, got {name!r}",
            where="--exception",
        )
    module_name, _, class_name = name.rpartition(".")
    cls: type[BaseException] | None = None
    if not module_name:
        found = getattr(builtins, class_name, None)
        if isinstance(found, type) and issubclass(found, BaseException):
            cls = found
        else:
            raise ConfigError(
                f"{class_name!r} is not a built-in exception; give module.Class",
                where="--exception",
            )
    else:
        try:
            found = getattr(importlib.import_module(module_name), class_name, None)
        except Exception:
            found = None
        if isinstance(found, type) and issubclass(found, BaseException):
            cls = found
    exc: BaseException | None = None
    if cls is not None:
        try:
            exc = cls(message) if message else cls()
        except Exception:
            exc = None
    if exc is None:
        stand_in = type(class_name, (Exception,), {"__module__": module_name or "builtins"})
        exc = stand_in(message)
    if status is not None:
        with contextlib.suppress(Exception):  # slotted or read-only: the name alone must do
            setattr(exc, "status_code", status)  # noqa: B010
    return exc
