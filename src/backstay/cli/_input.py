"""Turning command-line text into library input, with errors that name the flag."""

from __future__ import annotations

import builtins
import contextlib
import importlib
import re
import sys
from pathlib import Path
from typing import Final

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

# The only modules ``--exception`` may import: the standard library's and the HTTP clients'
# and SDKs' exception modules. Importing a module runs its code, so a name outside this
# list is looked up only among modules already imported, and otherwise explained by name.
IMPORTABLE: Final = frozenset(
    {
        "aiohttp",
        "aiohttp.client_exceptions",
        "anthropic",
        "anthropic._exceptions",
        "asyncio",
        "asyncio.exceptions",
        "builtins",
        "concurrent.futures",
        "google.api_core.exceptions",
        "google.genai",
        "google.genai.errors",
        "http.client",
        "httpcore",
        "httpx",
        "json",
        "openai",
        "openai._exceptions",
        "requests",
        "requests.exceptions",
        "socket",
        "ssl",
        "subprocess",
        "urllib.error",
        "urllib3",
        "urllib3.exceptions",
    }
)


def _known_class(module_name: str, class_name: str) -> type[BaseException] | None:
    """The exception class ``module_name.class_name`` if its module is already imported or
    may be (``IMPORTABLE``); ``None`` otherwise, and for anything that is not one."""
    module = sys.modules.get(module_name)
    if module is None and module_name in IMPORTABLE:
        try:
            module = importlib.import_module(module_name)
        except Exception:  # not installed, or broken: the name alone must do
            module = None
    try:
        found = getattr(module, class_name, None) if module is not None else None
    except Exception:
        return None
    return found if isinstance(found, type) and issubclass(found, BaseException) else None


def build_exception(spec: str, *, status: int | None) -> BaseException:
    """An exception from ``'module.Class'`` or ``'module.Class: message'``.

    The real class is used when its module is already imported or is one of
    ``IMPORTABLE`` (no other module is imported), and it is constructible from a message;
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
        cls = _known_class(module_name, class_name)
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
