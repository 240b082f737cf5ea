"""Operation and attempt identifiers: the idempotency key, built and parsed one way.

* ``operation_id(workflow_id, task_id, task_run_id)`` → ``"wf:task:run"``: one logical
  operation. It stays the same across every retry of that operation, so it is the key
  that deduplicates them (and the ``Idempotency-Key`` header sent with every attempt).
* ``attempt_id(operation_id, n)`` → ``"wf:task:run:attempt_3"``: one try of it (n ≥ 1),
  for logs, events and artefacts; never used to deduplicate. The adapter reliability
  contract's ``attempt_id(workflow_id, task_id, task_run_id, attempt)`` gives the same.

A part must be a non-empty string of printable characters without ``":"``, so that every
id parses back into exactly the parts it was built from. Bad input raises ``ConfigError``
naming the part.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Final, overload

from backstay.errors import ConfigError

__all__ = [
    "ATTEMPT_PREFIX",
    "SEPARATOR",
    "AttemptIdParts",
    "OperationIdParts",
    "attempt_id",
    "operation_id",
    "parse_attempt_id",
    "parse_operation_id",
]

SEPARATOR: Final = ":"
ATTEMPT_PREFIX: Final = "attempt_"
_PARTS: Final = ("workflow_id", "task_id", "task_run_id")


def _check_part(value: object, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise ConfigError(f"must be a non-empty string, got {value!r}", where=where)
    if SEPARATOR in value:
        raise ConfigError(f"must not contain {SEPARATOR!r}, got {value!r}", where=where)
    if not value.isprintable():
        raise ConfigError(f"must hold printable characters only, got {value!r}", where=where)
    return value


def _check_attempt(n: object) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ConfigError(f"must be a whole number >= 1, got {n!r}", where="n")
    return n


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class OperationIdParts:
    """The three parts of an operation id; ``operation_id`` joins them back."""

    workflow_id: str
    task_id: str
    task_run_id: str

    @property
    def operation_id(self) -> str:
        return operation_id(self.workflow_id, self.task_id, self.task_run_id)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class AttemptIdParts:
    """An attempt id split into its operation id and attempt number ``n`` (≥ 1)."""

    operation_id: str
    n: int

    @property
    def attempt_id(self) -> str:
        return attempt_id(self.operation_id, self.n)


def operation_id(workflow_id: str, task_id: str, task_run_id: str) -> str:
    """``"{workflow_id}:{task_id}:{task_run_id}"``, each part validated."""
    if type(workflow_id) is str and type(task_id) is str and type(task_run_id) is str:
        return _joined(workflow_id, task_id, task_run_id)
    return _join(workflow_id, task_id, task_run_id)


def _join(workflow_id: str, task_id: str, task_run_id: str) -> str:
    parts = (workflow_id, task_id, task_run_id)
    return SEPARATOR.join(_check_part(v, w) for v, w in zip(parts, _PARTS, strict=True))


# A task's id is asked for many times while it runs (about 28 times an attempt): the
# checked join is kept for the tasks in flight. Plain strings only (hashable, and what the
# checks accept); an invalid part raises every time, as errors are not cached.
_joined = functools.lru_cache(maxsize=4096)(_join)


def parse_operation_id(text: str) -> OperationIdParts:
    """The parts of an id made by ``operation_id``; ``ConfigError`` otherwise."""
    if not isinstance(text, str):
        raise ConfigError(f"must be a string, got {text!r}", where="operation_id")
    pieces = text.split(SEPARATOR)
    if len(pieces) != len(_PARTS):
        raise ConfigError(
            f"must be workflow_id:task_id:task_run_id, got {text!r}", where="operation_id"
        )
    for value, name in zip(pieces, _PARTS, strict=True):
        _check_part(value, f"operation_id.{name}")
    return OperationIdParts(workflow_id=pieces[0], task_id=pieces[1], task_run_id=pieces[2])


@overload
def attempt_id(operation_id: str, n: int, /) -> str: ...


@overload
def attempt_id(workflow_id: str, task_id: str, task_run_id: str, attempt: int, /) -> str: ...


def attempt_id(*args: str | int) -> str:
    """``"{operation_id}:attempt_{n}"`` for a valid operation id and ``n >= 1``; also the
    adapter reliability contract's form, ``attempt_id(workflow_id, task_id, task_run_id,
    attempt)`` → ``"{workflow_id}:{task_id}:{task_run_id}:attempt_{attempt}"``."""
    if len(args) == len(_PARTS) + 1:
        op = SEPARATOR.join(_check_part(v, w) for v, w in zip(args[:3], _PARTS, strict=True))
        n = args[3]
    elif len(args) == 2:
        op, n = str(args[0]), args[1]
        parse_operation_id(op)
    else:
        raise ConfigError(
            "give (operation_id, n) or (workflow_id, task_id, task_run_id, attempt)",
            where="attempt_id",
        )
    return f"{op}{SEPARATOR}{ATTEMPT_PREFIX}{_check_attempt(n)}"


def parse_attempt_id(text: str) -> AttemptIdParts:
    """The operation id and attempt number of an id made by ``attempt_id``."""
    if not isinstance(text, str) or SEPARATOR not in text:
        raise ConfigError(f"must be <operation_id>:attempt_<n>, got {text!r}", where="attempt_id")
    head, _, tail = text.rpartition(SEPARATOR)
    digits = tail.removeprefix(ATTEMPT_PREFIX)
    canonical = digits.isascii() and digits.isdigit() and not digits.startswith("0")
    if not tail.startswith(ATTEMPT_PREFIX) or not canonical:
        raise ConfigError(
            f"must end with :{ATTEMPT_PREFIX}<n> (n >= 1, no leading zeros), got {text!r}",
            where="attempt_id",
        )
    parse_operation_id(head)
    return AttemptIdParts(operation_id=head, n=int(digits))
