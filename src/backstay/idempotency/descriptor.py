"""``SkillDescriptor``: an operation's declaration of whether running it twice is harmless.

The error contract has each skill declare its idempotency in a descriptor
(``SkillDescriptor(skill_id="skill.http_call", idempotent=True)``); backstay declares it
per operation the same way, and ``run`` / ``run_sync`` take the ``IdempotencyGuard`` path
the declaration calls for:

* ``idempotent=False``: ``guard.run_non_idempotent`` — refused with
  ``MissingIdempotencyKey`` (``ERR_MISSING_IDEMPOTENCY_KEY``) without a key, else run at
  most once per key, its result cached.
* ``idempotent=True`` with a key: ``guard.run`` — at most once per key, cached.
* ``idempotent=True`` without a key: ``fn()`` itself, as often as it is called: repeating
  it is harmless, which is what the declaration says.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from backstay.errors import ConfigError
from backstay.idempotency.guard import AsyncOperation, IdempotencyGuard, SyncOperation

__all__ = ["SkillDescriptor"]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SkillDescriptor:
    """``skill_id`` names the operation; ``idempotent`` says whether a repetition is
    harmless (``GET``/``HEAD``/``OPTIONS``, a replacing ``PUT``) or does harm (a ``POST``,
    an agent run that edits files, a billed call). ``ConfigError`` names a wrong field."""

    skill_id: str
    idempotent: bool

    def __post_init__(self) -> None:
        if not isinstance(self.skill_id, str) or not self.skill_id.strip():
            raise ConfigError(
                f"must be a non-empty string, got {self.skill_id!r}", where="skill.skill_id"
            )
        if not isinstance(self.idempotent, bool):
            raise ConfigError(
                f"must be true or false, got {self.idempotent!r}", where="skill.idempotent"
            )

    async def run(
        self, guard: IdempotencyGuard, operation_id: str | None, fn: AsyncOperation
    ) -> dict[str, Any]:
        """``fn``'s result, through ``guard`` as this declaration calls for (see the module)."""
        if not self.idempotent:
            return await guard.run_non_idempotent(operation_id, fn)
        if operation_id:
            return await guard.run(operation_id, fn)
        return dict(await fn())

    def run_sync(
        self, guard: IdempotencyGuard, operation_id: str | None, fn: SyncOperation
    ) -> dict[str, Any]:
        """``run`` for a plain function."""
        if not self.idempotent:
            return guard.run_non_idempotent_sync(operation_id, fn)
        if operation_id:
            return guard.run_sync(operation_id, fn)
        return dict(fn())
