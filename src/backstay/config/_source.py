"""Where an effective configuration value came from: the file, the environment, a
``--set`` flag, or a default."""

from __future__ import annotations

import dataclasses
import enum

__all__ = ["Source", "SourceKind"]


class SourceKind(enum.StrEnum):
    DEFAULT = "default"
    FILE = "file"
    ENV = "env"
    CLI = "cli"


@dataclasses.dataclass(frozen=True, slots=True)
class Source:
    """``kind`` and a human-readable ``location``: ``backstay.yaml:12``,
    ``BACKSTAY__RETRY__DEFAULT_POLICY``, ``--set retry.default_policy=fast``,
    ``built-in policy 'standard'``."""

    kind: SourceKind
    location: str
    via: str | None = None
    """The policy a value was inherited from through ``extends``, if any."""

    def __str__(self) -> str:
        if self.via is None:
            return self.location
        return f"{self.location} (inherited from policy {self.via!r})"

    def inherited(self, parent: str) -> Source:
        """The same origin, noted as inherited from policy ``parent`` (once: the policy
        that set the value is named, not every policy in between)."""
        if self.via is not None or self.kind is SourceKind.DEFAULT:
            return self
        return dataclasses.replace(self, via=parent)


DEFAULT: Source = Source(SourceKind.DEFAULT, "default")
