"""A text or path flag's value taken as typer takes it, without pydantic.

typer (0.2x) checks every given value through a pydantic ``TypeAdapter``; importing
pydantic costs about 0.13 s of CPU, which ``backstay health --json`` (a liveness probe)
and ``backstay run`` paid for ``--state-dir DIR`` alone. For a value typer's adapter would
only pass through, the same result is made here:

* ``str``: the text as given (typer's adapter: ``str(value)`` of a ``str``);
* ``list[str]`` (a repeated flag): the texts as given, in a list;
* ``Path`` (and its subclasses): ``Path(value)`` and then typer's own path checks
  (``exists``, ``dir_okay``, ``resolve_path``…), which it makes after its adapter;
* an ``int`` or ``float`` flag's value that is already a number of that type, the flag
  having no ``min`` or ``max`` (its default: ``run``'s ``--timeout`` made every run import
  typer's adapters and build one): the number as it is.

Any other value (a number, a list, a flag with a parser of its own) goes to typer's adapter
as before, built when such a value is given: a flag left out (``None``) needs none.
tests/cli/test_plain_values.py holds the results equal to typer's for every ``str`` and
``Path`` flag of every command, and for every number flag's default and other numbers.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import typer.core
from typer._coercion import RuntimeParam, TypeDescriptor, build_runtime_param
from typer._param_types import coerce_cli_path, lenient_issubclass

__all__ = ["install", "is_plain", "plain_param"]


@dataclasses.dataclass(frozen=True)
class _PlainParam(RuntimeParam):
    """A flag's check: a ``str`` or ``Path`` value (``plain``) taken here, any other value
    by typer's adapter, built when such a value comes (never for a flag not given)."""

    descriptor: TypeDescriptor
    plain: bool

    def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
        if self.plain and self.annotation == list[str] and _texts(value):
            return list(value)
        if _a_number_as_it_is(value, self.annotation, self.parameter_info):
            return value
        if not (self.plain and isinstance(value, str)):
            full = build_runtime_param(self.descriptor)
            return full._coerce_value(value, param=param, ctx=ctx)
        if self.annotation is str:
            return value
        path_type = self.annotation
        return coerce_cli_path(
            path_type(value), self.parameter_info, path_type=path_type, param=param, ctx=ctx
        )


def _a_number_as_it_is(value: Any, annotation: Any, info: Any) -> bool:
    """Whether ``value`` is an ``int`` or ``float`` of exactly the flag's type, with no
    bounds to check (a number flag's default: ``run --timeout``'s): typer's adapter gives
    it back as it is."""
    if annotation not in (int, float) or type(value) is not annotation:
        return False
    return getattr(info, "min", None) is None and getattr(info, "max", None) is None


def _texts(value: Any) -> bool:
    return isinstance(value, list | tuple) and all(isinstance(v, str) for v in value)


def is_plain(descriptor: TypeDescriptor) -> bool:
    """Whether a flag takes a ``str``, a ``Path`` or a ``list[str]`` that typer's adapter
    only passes on."""
    info = descriptor.parameter_info
    if info.parser is not None or descriptor.file_annotation is not None:
        return False
    annotation = descriptor.annotation
    if annotation is str or annotation == list[str]:
        return True
    return (
        isinstance(annotation, type)
        and lenient_issubclass(annotation, Path)
        and info.path_type is None
    )


def plain_param(descriptor: TypeDescriptor) -> RuntimeParam:
    """A flag's check that imports pydantic only for a value ``is_plain`` does not cover."""
    return _PlainParam(
        annotation=descriptor.annotation,
        parameter_info=descriptor.parameter_info,
        descriptor=descriptor,
        plain=is_plain(descriptor),
    )


def _get_runtime_param(self: Any) -> RuntimeParam:
    if self._runtime_param is None:
        self._runtime_param = plain_param(self.type_descriptor)
    found: RuntimeParam = self._runtime_param
    return found


def install() -> None:
    """Make typer's parameters check ``str`` and ``Path`` values with ``plain_param``
    (nothing where typer's parameters have no ``get_runtime_param`` to replace)."""
    parameter = getattr(typer.core, "_TyperParameter", None)
    if parameter is None or not hasattr(parameter, "get_runtime_param"):
        return
    setattr(parameter, "get_runtime_param", _get_runtime_param)  # noqa: B010
