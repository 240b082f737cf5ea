"""One style for the command line's help and its errors, whatever command prints them.

``typer`` formats help with rich; backstay's help is plain text, so (applied once, by
``apply()``, when the command line is built):

* help text is never read as rich markup (``pip install 'backstay[ray]'`` stays whole),
  and a single line break inside a paragraph is a space (a docstring's wrapping never
  breaks a sentence on the screen); a blank line still separates paragraphs;
* the value column names what a flag takes as a word (``PATH``, ``INTEGER``, a metavar),
  and nothing for an on/off flag (no ``<bool>``);
* a bad flag or argument is one line in backstay's own format — ``error: WHERE: what is
  wrong`` — and exit code 2, as every error backstay finds itself
  (``_errors.usage_error``), with ``--help`` named for the rest.

``-h`` is ``--help`` on every command (``HELP_OPTIONS``, the root's context settings).
"""

from __future__ import annotations

import inspect
import re
from typing import TYPE_CHECKING, Any, Final

import typer.core
from typer._click import exceptions as click_errors

# rich, typer's formatter, is imported when help or an error is printed: a command that
# prints neither (``run``, ``health --json``) does not load it for its style.
if TYPE_CHECKING:
    from rich.text import Text

__all__ = ["HELP_OPTIONS", "apply", "error_line", "print_error"]

HELP_OPTIONS: Final = {"help_option_names": ["-h", "--help"]}
_WORDS: Final = {
    "str": "TEXT",
    "int": "INTEGER",
    "float": "NUMBER",
    "bool": "BOOLEAN",
    "path": "PATH",
    "file": "FILE",
    "directory": "DIRECTORY",
}
_SINGLE_BREAK: Final = re.compile(r"(?<!\n)\n(?!\n)")
_RANGES: Final = (
    (re.compile(r"^(.+) is not in the range x>=(\S+)\.$"), "must be at least {1}, got {0}"),
    (re.compile(r"^(.+) is not in the range x<=(\S+)\.$"), "must be at most {1}, got {0}"),
    (
        re.compile(r"^(.+) is not in the range (\S+)<=x<=(\S+)\.$"),
        "must be from {1} to {2}, got {0}",
    ),
    (re.compile(r"^'?(.*?)'? is not a valid integer\.$"), "must be a whole number, got {0!r}"),
    (re.compile(r"^'?(.*?)'? is not a valid float\.$"), "must be a number, got {0!r}"),
)
_applied: list[bool] = []


def _plain_text(*, text: str, style: str = "", markup_mode: Any = None) -> Text:
    """Help text as it is written (no markup), its paragraphs unwrapped."""
    from rich.text import Text  # noqa: PLC0415 - see the imports

    del markup_mode
    text = inspect.cleandoc(text)
    if not text.startswith("\b"):
        text = _SINGLE_BREAK.sub(" ", text)
    return Text(text.replace("\b\n", ""), style=style)


def _value_word(self: Any, ctx: Any) -> str | None:
    """What the value column shows: the metavar, a word for the type, nothing for a flag."""
    if self.metavar is not None:
        return None if isinstance(self, typer.core.TyperArgument) else str(self.metavar)
    if getattr(self, "is_flag", False):
        return None
    label = typer.core._TyperParameter.display_type(self, ctx).strip("<>")
    if label.startswith("list[") and label.endswith("]"):
        label = label[5:-1]
    return _WORDS.get(label, label.upper())


# What a value check of typer's (pydantic's error types) says, in backstay's words.
_CHECKS: Final = {
    "greater_than_equal": "must be at least {ge}",
    "greater_than": "must be more than {gt}",
    "less_than_equal": "must be at most {le}",
    "less_than": "must be less than {lt}",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "float_parsing": "must be a number",
    "bool_parsing": "must be true or false",
}


def _checked(exc: BaseException) -> str | None:
    """The words for a failed value check whose cause is a pydantic ``ValidationError``."""
    errors = getattr(exc.__cause__, "errors", None)
    if not callable(errors):
        return None
    found = errors()
    if not found:
        return None
    first = found[0]
    words = _CHECKS.get(first.get("type", ""))
    if words is None:
        return None
    given = first.get("input")
    shown = given if first.get("type", "").endswith(("than", "equal")) else repr(given)
    return f"{words.format(**first.get('ctx', {}))}, got {shown}"


def _reworded(message: str) -> str:
    for pattern, words in _RANGES:
        found = pattern.match(message)
        if found:
            return words.format(*found.groups())
    return message[:1].lower() + message[1:].rstrip(".")


def _where(param: Any) -> str:
    """A parameter as an error names it: its long flag, or an argument's metavar."""
    flags = [o for o in getattr(param, "opts", ()) if o.startswith("--")]
    if flags:
        return str(flags[0])
    return str(getattr(param, "metavar", None) or str(param.name).upper())


def error_line(exc: click_errors.ClickException) -> str:
    """``exc`` (a bad flag, a missing argument…) as backstay words it, without ``error:``."""
    param = getattr(exc, "param", None)
    if isinstance(exc, click_errors.MissingParameter) and param is not None:
        return f"{_where(param)}: required"
    if isinstance(exc, click_errors.BadParameter) and param is not None:
        return f"{_where(param)}: {_checked(exc) or _reworded(exc.message)}"
    return _reworded(exc.format_message())


def print_error(exc: click_errors.ClickException) -> None:
    """Print ``exc`` as ``error: WHERE: what is wrong``, and where the help is; nothing
    for a group given no command (its help is shown already)."""
    if isinstance(exc, click_errors.NoArgsIsHelpError):
        return
    from rich.console import Console  # noqa: PLC0415 - see the imports
    from rich.markup import escape  # noqa: PLC0415

    out = Console(stderr=True, soft_wrap=True)
    out.print(f"[bold red]error:[/] {escape(error_line(exc))}", highlight=False)
    ctx = getattr(exc, "ctx", None)
    if isinstance(exc, click_errors.UsageError) and ctx is not None:
        out.print(escape(f"{ctx.command_path} --help says what it takes"), highlight=False)


def _plain_help(original: Any) -> Any:
    """``format_help`` that first makes typer's rich help plain text (``_plain_text``):
    done when help is shown, so a command that prints none never loads the formatter."""

    def format_help(self: Any, ctx: Any, formatter: Any) -> Any:
        import typer.rich_utils  # noqa: PLC0415 - the help formatter, only for help

        setattr(typer.rich_utils, "_make_rich_text", _plain_text)  # noqa: B010
        setattr(typer.rich_utils, "rich_format_error", print_error)  # noqa: B010
        return original(self, ctx, formatter)

    return format_help


def _help_flag_off(original: Any) -> Any:
    """``get_help_option`` whose flag, when not given, is ``False`` rather than ``None``:
    typer takes a flag's ``bool`` as it is, but checks a ``None`` through pydantic, whose
    import (about 0.1 s of CPU) a command's ``--help`` then paid for the root's unused
    ``--help``. Nothing else reads the value (the option exposes none)."""

    def get_help_option(self: Any, ctx: Any) -> Any:
        option = original(self, ctx)
        if option is not None and option.default is None:
            option.default = False
        return option

    return get_help_option


def _plain_flag_values() -> None:
    """Check ``str`` and ``Path`` flag values without pydantic (``cli._plain_values``),
    where typer has the per-value check it replaces; any other typer checks as it does."""
    try:
        from backstay.cli import _plain_values  # noqa: PLC0415 - typer's internals vary
    except ImportError:
        return
    _plain_values.install()


def apply() -> None:
    """Install the style (once per process). typer has no setting for any of it: its own
    hooks are replaced. Errors in a command's flags are printed by the root group
    (``_faults.FaultGuard``) with ``print_error``."""
    if _applied:
        return
    _applied.append(True)
    _plain_flag_values()
    setattr(typer.core._TyperParameter, "display_type_rich", _value_word)  # noqa: B010
    setattr(typer.core.TyperOption, "display_type_rich", _value_word)  # noqa: B010
    for cls in (typer.core.TyperCommand, typer.core.TyperGroup):
        setattr(cls, "format_help", _plain_help(cls.format_help))  # noqa: B010
        setattr(cls, "get_help_option", _help_flag_off(cls.get_help_option))  # noqa: B010
