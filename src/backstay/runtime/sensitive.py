"""``SensitiveRedactor``: personal and payment data out of everything the runtime records.

On top of ``backstay.redact`` (API keys, tokens, credentials, registered secrets) it
replaces e-mail addresses, phone numbers, payment card numbers that pass the Luhn check,
IBANs that pass the ISO 13616 mod-97 check, JWTs, and any pattern the user adds. Checked
patterns keep false positives down: an order number of 16 digits that fails Luhn stays.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

from backstay.redact import JWT, iban_valid, luhn_valid, personal_data, redact

__all__ = ["SensitiveRedactor", "iban_valid", "luhn_valid"]

# The patterns live in ``backstay.redact`` (``redact_personal``): what is kept at rest
# anywhere in backstay passes the same ones.
CUSTOM: Final = "[REDACTED]"
_JWT = re.compile(r"\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}")


class SensitiveRedactor:
    """Callable on text; ``mapping`` walks JSON values. ``patterns`` are the user's own
    regular expressions, each match replaced by ``[REDACTED]``."""

    __slots__ = ("_custom",)

    def __init__(self, patterns: Iterable[str | re.Pattern[str]] = ()) -> None:
        self._custom = tuple(re.compile(p) if isinstance(p, str) else p for p in patterns)

    def __call__(self, text: object) -> str:
        out = redact(_JWT.sub(JWT, text if isinstance(text, str) else redact(text)))
        for pattern in self._custom:
            out = pattern.sub(CUSTOM, out)
        return personal_data(out)

    def mapping(self, value: Any, _depth: int = 0) -> Any:
        """A copy of a JSON value with every string redacted (keys kept)."""
        if _depth > 20:
            return "…"
        if isinstance(value, Mapping):
            return {str(k): self.mapping(v, _depth + 1) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.mapping(v, _depth + 1) for v in value]
        if isinstance(value, str):
            return self(value)
        return value
