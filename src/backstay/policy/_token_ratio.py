"""``TokenRatio``: the tokens a provider charges per token a limiter estimated, learned from
the provider's ``remaining`` headers. A pure, frozen value; it reads no clock.

Two answers, ``a`` then ``b``, to requests reserved in that order, bracket what the provider
charged for the requests reserved after ``a`` up to and including ``b``::

    charged   = remaining_a + refill · (t_b − t_a) − remaining_b
    estimated = estimated_through_b − estimated_through_a − refused between

where the refused are the estimates of the requests answered in between that the provider
refused (a 429 takes nothing from its bucket; counting them would teach a ratio below the
true one, and more refusals with it). This holds while the provider's bucket cannot have
been full in between (``remaining_a`` plus the refill stays under the limit): a full bucket
stops refilling, and the pair says nothing. An answer to a request reserved before the last
one used is skipped, so that the pairs form one chain: their sums telescope, and the error
of one pair (the provider counting ``b`` before a request reserved ahead of it, a slower
response) is undone by the next.
Older pairs fade (the sums are multiplied by ``DECAY`` for each new pair), and the ratio is
bounded to ``[MIN_RATIO, MAX_RATIO]``: it corrects the estimate, it does not replace it.
"""

from __future__ import annotations

import dataclasses
from typing import Final

__all__ = ["MAX_RATIO", "MIN_RATIO", "TokenRatio"]

DECAY: Final = 0.98
MIN_RATIO: Final = 0.5
MAX_RATIO: Final = 2.0
# Pairs needed before the ratio is used: one pair is as likely to be an out-of-order one.
MIN_PAIRS: Final = 4
_MINUTE_S: Final = 60.0


@dataclasses.dataclass(frozen=True, slots=True)
class _Answer:
    estimated_through: float
    remaining: float
    at: float
    refused_through: float


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class TokenRatio:
    """Decayed sums of tokens charged and estimated over the pairs seen, and the last
    answer of the chain."""

    charged: float = 0.0
    estimated: float = 0.0
    pairs: int = 0
    refused: float = 0.0
    last: _Answer | None = None

    @property
    def ratio(self) -> float:
        """Charged per estimated token: 1.0 until ``MIN_PAIRS`` pairs were seen; bounded."""
        if self.pairs < MIN_PAIRS or self.estimated <= 0.0:
            return 1.0
        return min(MAX_RATIO, max(MIN_RATIO, self.charged / self.estimated))

    def answered(
        self,
        *,
        estimated_through: float,
        remaining: float,
        limit: float,
        at: float,
        refused: float = 0.0,
    ) -> TokenRatio:
        """This ratio after an answer at monotonic time ``at`` to the request whose
        reservation had estimated ``estimated_through`` tokens so far (its own included):
        the provider had ``remaining`` of ``limit`` tokens a minute left. ``refused``: the
        request's own estimate when the provider refused it (0 when it was served)."""
        refused_through = self.refused + refused
        answer = _Answer(estimated_through, remaining, at, refused_through)
        last = self.last
        if last is None:
            return dataclasses.replace(self, refused=refused_through, last=answer)
        if estimated_through <= last.estimated_through:
            return dataclasses.replace(self, refused=refused_through)
        refill = max(0.0, at - last.at) * limit / _MINUTE_S
        if limit <= 0.0 or last.remaining + refill >= limit:
            return dataclasses.replace(self, refused=refused_through, last=answer)
        estimated = estimated_through - last.estimated_through
        estimated -= refused_through - last.refused_through
        return TokenRatio(
            charged=self.charged * DECAY + (last.remaining + refill - remaining),
            estimated=self.estimated * DECAY + max(0.0, estimated),
            pairs=self.pairs + 1,
            refused=refused_through,
            last=answer,
        )
