"""Reading the object being classified, whose own code may raise anything.

An exception's ``__str__``, a property or ``__getattr__`` is code of the object being
classified. An ``Exception`` it raises makes that one reading unavailable, and the rules
go on without it. A ``BaseException`` that is not an ``Exception`` (``KeyboardInterrupt``,
``SystemExit``, ``GeneratorExit``, ``asyncio.CancelledError``) raised there is a property
of that object too, not of the process: the readers turn it into ``UnreadableObject``, and
``classify`` answers ``ERR_UNKNOWN`` with ``details.source == "classifier_error"``.

A real Ctrl-C must still stop the program. Python delivers a ``SIGINT`` as a
``KeyboardInterrupt`` raised wherever the interpreter happens to be: between two of
backstay's own instructions, or at any instruction of the object's code, but never at a
``raise`` statement. So ``raised_by_object`` counts a ``KeyboardInterrupt`` as the
object's only when the innermost frame of its traceback, below the reader's own frame,
stopped at a ``raise``; any other is re-raised as it is.
"""

from __future__ import annotations

import dis
from typing import Final, NoReturn

__all__ = ["UnreadableObject", "raised_by_object", "unreadable"]

_RAISE: Final = frozenset(dis.opmap[name] for name in ("RAISE_VARARGS", "RERAISE"))


class UnreadableObject(Exception):
    """Reading the object being classified raised ``raised`` (a ``BaseException``)."""

    def __init__(self, raised: BaseException) -> None:
        super().__init__(type(raised).__name__)
        self.raised = type(raised).__name__


def raised_by_object(err: BaseException) -> bool:
    """Whether ``err``, caught around one reading of an object, was raised by the object's
    own code rather than delivered by a signal (see the module docstring)."""
    tb = err.__traceback__
    if tb is None or tb.tb_next is None:
        return False  # raised between the reader's own instructions
    if not isinstance(err, KeyboardInterrupt):
        return True  # no signal handler of Python's raises anything else
    inner = tb.tb_next
    while inner.tb_next is not None:
        inner = inner.tb_next
    code = inner.tb_frame.f_code.co_code
    return 0 <= inner.tb_lasti < len(code) and code[inner.tb_lasti] in _RAISE


def unreadable(err: BaseException) -> NoReturn:
    """Re-raise ``err`` when it is not the object's (a real Ctrl-C); otherwise raise
    ``UnreadableObject`` for ``classify`` to answer with a ``classifier_error``."""
    if isinstance(err, Exception) or not raised_by_object(err):
        raise err
    raise UnreadableObject(err) from None
