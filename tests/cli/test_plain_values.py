"""A ``str`` or ``Path`` flag's value, checked without pydantic, is what typer's own check
(its pydantic adapter) makes of it, for every such flag of every command; a flag left out
builds no adapter."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer._click import Context
from typer._click.exceptions import BadParameter
from typer._coercion import build_runtime_param

from backstay.cli._lazy import COMMANDS, load
from backstay.cli._plain_values import is_plain, plain_param


def _params(command: Any) -> Iterator[tuple[Any, Any]]:
    for param in command.params:
        if hasattr(param, "type_descriptor"):
            yield command, param
    for sub in getattr(command, "commands", {}).values():
        yield from _params(sub)


def _every_param() -> list[tuple[Any, Any]]:
    return [found for listed in COMMANDS for found in _params(load(listed))]


def _outcome(check: Any, value: Any, param: Any, ctx: Context) -> tuple[str, Any]:
    try:
        return ("value", check._coerce_value(value, param=param, ctx=ctx))
    except BadParameter as exc:
        return ("error", exc.message)


def test_each_plain_flag_takes_a_value_as_typer_does(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("x", encoding="utf-8")
    (tmp_path / "a-dir").mkdir()
    values = [
        "batch",
        "",
        "-",
        "a b/../c",
        "~/x",
        "redis://127.0.0.1:6379/0?namespace=n",
        str(tmp_path / "a-file"),
        str(tmp_path / "a-dir"),
        str(tmp_path / "missing"),
    ]
    found = [(c, p) for c, p in _every_param() if is_plain(p.type_descriptor)]
    kinds = {p.type_descriptor.annotation for _, p in found}
    assert kinds == {str, Path, list[str]}  # each kind is met among the commands' flags
    for command, param in found:
        ctx = Context(command)
        plain = plain_param(param.type_descriptor)
        full = build_runtime_param(param.type_descriptor)
        given: list[Any] = list(values)
        if param.type_descriptor.annotation == list[str]:
            given = [(), tuple(values), ("k=v",), ["a", "a"]]
        for value in given:
            mine = _outcome(plain, value, param, ctx)
            theirs = _outcome(full, value, param, ctx)
            assert mine == theirs, (command.name, param.name, value)
            assert type(mine[1]) is type(theirs[1])


def test_another_flag_is_still_checked_by_typer() -> None:
    params = {p.name: (c, p) for c, p in _every_param()}
    command, param = params["concurrency"]
    assert not is_plain(param.type_descriptor)
    check = plain_param(param.type_descriptor)
    assert check._coerce_value("3", param=param, ctx=Context(command)) == 3
    with pytest.raises(BadParameter):
        check._coerce_value("three", param=param, ctx=Context(command))


def test_a_number_flags_number_is_taken_as_typer_takes_it() -> None:
    found = [
        (c, p)
        for c, p in _every_param()
        if p.type_descriptor.annotation in (int, float)
        and p.type_descriptor.parameter_info.min is None
        and p.type_descriptor.parameter_info.max is None
    ]
    names = {p.name for _, p in found}
    assert "timeout" in names  # run --timeout: its default made every run build an adapter
    for command, param in found:
        ctx = Context(command)
        plain = plain_param(param.type_descriptor)
        full = build_runtime_param(param.type_descriptor)
        kind = param.type_descriptor.annotation
        given = [param.default, kind(0), kind(-1), kind(10**6)]
        if kind is float:
            given += [1.5, float("inf"), 1e-9]
        for value in [v for v in given if type(v) is kind]:
            mine = _outcome(plain, value, param, ctx)
            assert mine == _outcome(full, value, param, ctx), (command.name, param.name, value)
            assert mine == ("value", value)


def test_a_bounded_number_flag_is_still_checked_by_typer() -> None:
    params = {p.name: (c, p) for c, p in _every_param()}
    command, param = params["concurrency"]  # min=1
    check = plain_param(param.type_descriptor)
    with pytest.raises(BadParameter):
        check._coerce_value(0, param=param, ctx=Context(command))
    assert check._coerce_value(3, param=param, ctx=Context(command)) == 3
