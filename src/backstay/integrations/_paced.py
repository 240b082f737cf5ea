"""The transports' per-request view of a shared rate limiter: ``backstay.policy._paced``
(the gateway paces its requests with the same object)."""

from __future__ import annotations

from backstay.policy._paced import PacedRequest as _Paced
from backstay.policy._paced import estimate_tokens

__all__ = ["_Paced", "estimate_tokens"]
