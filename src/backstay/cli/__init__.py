"""The ``backstay`` command line: one module per command, thin over the library."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from backstay.cli._app import app


def main() -> None:
    """The entry point (``backstay = backstay.cli:main``)."""
    from backstay.cli._process_end import register  # noqa: PLC0415 - see its docstring

    register()  # the interpreter's last collections skip what lived (cli/_process_end.py)
    if sys.argv[1:] == ["--version"]:  # answered before the command line is built
        from backstay._version import __version__  # noqa: PLC0415

        print(f"backstay {__version__}")
        return
    if sys.argv[1:2] == ["health"]:  # a liveness probe: answered without typer if it can be
        from backstay.cli._health_probe import answer  # noqa: PLC0415

        code = answer(sys.argv[2:])
        if code is not None:
            if code:
                raise SystemExit(code)
            return
    from backstay.cli._app import main as run  # noqa: PLC0415 - typer loads here

    run()


def __getattr__(name: str) -> Any:
    if name == "app":  # the typer application, built on first use
        from backstay.cli._app import app  # noqa: PLC0415

        globals()[name] = app
        return app
    raise AttributeError(f"module 'backstay.cli' has no attribute {name!r}")


__all__ = ["app", "main"]
