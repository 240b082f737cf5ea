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

from backstay.redact import redact

__all__ = ["SensitiveRedactor", "iban_valid", "luhn_valid"]

EMAIL: Final = "[EMAIL]"
PHONE: Final = "[PHONE]"
CARD: Final = "[CARD]"
IBAN: Final = "[IBAN]"
JWT: Final = "[JWT]"
CUSTOM: Final = "[REDACTED]"

_EMAIL = re.compile(
    r"(?<![\w.+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"
)
_JWT = re.compile(r"\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}")
_CARD = re.compile(r"(?<![\d-])(?:\d[ -]?){12,18}\d(?![\d-])")
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]){11,30}\b")
_PHONE = re.compile(
    r"(?<![\w+])(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,4}\)[ .-]?)?\d{2,4}(?:[ .-]\d{2,4}){1,4}(?!\w)"
)


def luhn_valid(digits: str) -> bool:
    """Whether ``digits`` (digits only) pass the Luhn check."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def iban_valid(text: str) -> bool:
    """Whether ``text`` (spaces allowed) is an IBAN whose mod-97 check holds."""
    iban = text.replace(" ", "").upper()
    if not 15 <= len(iban) <= 34 or not iban[:2].isalpha() or not iban[2:4].isdigit():
        return False
    moved = iban[4:] + iban[:4]
    try:
        number = int("".join(str(int(ch, 36)) for ch in moved))
    except ValueError:
        return False
    return number % 97 == 1


def _card(match: re.Match[str]) -> str:
    digits = re.sub(r"\D", "", match.group())
    return CARD if 13 <= len(digits) <= 19 and luhn_valid(digits) else match.group()


def _iban(match: re.Match[str]) -> str:
    return IBAN if iban_valid(match.group()) else match.group()


def _phone(match: re.Match[str]) -> str:
    text = match.group()
    digits = re.sub(r"\D", "", text)
    # An international prefix or an area code in brackets marks a phone number; a bare
    # group of numbers (a date, a version) needs the length of a full national number.
    marked = text.startswith(("+", "("))
    return PHONE if (7 if marked else 9) <= len(digits) <= 15 else text


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
        if "@" in out:
            out = _EMAIL.sub(EMAIL, out)
        out = _IBAN.sub(_iban, out)
        out = _CARD.sub(_card, out)
        return _PHONE.sub(_phone, out)

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
