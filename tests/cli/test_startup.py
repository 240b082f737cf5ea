"""Start-up of the command line: ``backstay --version`` and ``backstay --help`` import no
command's module, each command loads only its own, and the one-liners ``backstay --help``
lists without loading them are the commands' own."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from typing import Any

import pytest
import typer.main

from backstay.cli import app
from backstay.cli._lazy import COMMANDS, LazyCommands, Listed, load

# What a command's module may pull in; none of it belongs to --version or the root's --help.
HEAVY = (
    "backstay.engine",
    "backstay.store",
    "backstay.adapters",
    "backstay.runtime",
    "backstay.observe",
    "backstay.config",
    "backstay.gateway",
    "backstay.fakeprovider",
)


def _loaded_after(args: list[str]) -> list[str]:
    """The ``backstay.*`` modules loaded by ``backstay ARGS`` run in a fresh interpreter."""
    script = (
        "import json, sys\n"
        f"sys.argv = ['backstay', *{args!r}]\n"
        "from backstay.cli import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "sys.stderr.write(json.dumps(sorted(m for m in sys.modules if m.startswith('backstay'))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    loaded: list[str] = json.loads(done.stderr.strip().splitlines()[-1])
    return loaded


def _first_paragraph(command: Any) -> str:
    return inspect.cleandoc(command.short_help or command.help or "").split("\n\n")[0].strip()


@pytest.mark.parametrize("listed", COMMANDS, ids=lambda listed: listed.name)
def test_each_one_liner_is_the_commands_own(listed: Listed) -> None:
    assert listed.help == _first_paragraph(load(listed))


def test_the_root_lists_every_command_once_in_order() -> None:
    root = typer.main.get_command(app)
    assert isinstance(root, LazyCommands)
    names = root.list_commands(root.make_context("backstay", ["--version"], resilient_parsing=True))
    assert names == [listed.name for listed in COMMANDS]
    assert len(set(names)) == len(names)


@pytest.mark.parametrize("args", [["--version"], ["--help"], []], ids=" ".join)
def test_the_root_imports_no_command(args: list[str]) -> None:
    loaded = _loaded_after(args)
    commands = {listed.module for listed in COMMANDS}
    assert not commands & set(loaded)
    assert not [name for name in loaded if name.startswith(HEAVY)]


def test_a_command_loads_its_own_module_only() -> None:
    loaded = set(_loaded_after(["explain", "--help"]))
    assert "backstay.cli.explain" in loaded
    assert not ({listed.module for listed in COMMANDS} - {"backstay.cli.explain"}) & loaded
