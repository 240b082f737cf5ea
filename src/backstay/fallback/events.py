"""The fallback chain's events (the engine's ``task.fell_back`` is in ``engine.events``).

| event | name | when |
|---|---|---|
| ``FellBack`` | ``retry.fell_back`` | a failure moved the call to another candidate |
| ``CandidateCooledDown`` | ``fallback.cooled_down`` | a candidate is left out until ``until`` |
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import logging
from typing import Any, ClassVar

from backstay.events import Event
from backstay.failure import Failure

__all__ = ["CandidateCooledDown", "FellBack"]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class FellBack(Event):
    """Attempt ``attempt`` failed on ``from_candidate``; the next runs on ``to_candidate``."""

    name: ClassVar[str] = "retry.fell_back"
    level: ClassVar[int] = logging.WARNING
    attempt: int
    from_candidate: str
    to_candidate: str
    kind: str
    failure: Failure


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CandidateCooledDown(Event):
    name: ClassVar[str] = "fallback.cooled_down"
    level: ClassVar[int] = logging.INFO
    candidate: str
    until: _dt.datetime
    kind: str

    def to_dict(self) -> dict[str, Any]:
        out = Event.to_dict(self)
        out["until"] = self.until.isoformat()
        return out
