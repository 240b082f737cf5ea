"""Redaction: the one function every path that lets text out goes through.

``redact(text)`` removes API keys and tokens of Anthropic, OpenAI and Google, bearer
tokens, the values of credential headers (``x-api-key``, ``authorization``,
``x-goog-api-key`` …), credential fields in JSON and query strings, the values of
environment variables whose names look secret, and any value registered with
``register_secret``. ``redact_mapping`` does the same through nested mappings and
sequences, and blanks the value of any key whose name looks secret.

``redact_personal(text)`` does what ``redact`` does and also replaces personal and payment
data: JWTs (``[JWT]``), e-mail addresses (``[EMAIL]``), IBANs that pass the ISO 13616
mod-97 check (``[IBAN]``), payment card numbers that pass the Luhn check (``[CARD]``) and
phone numbers (``[PHONE]``). It is the form everything backstay keeps at rest takes (task
specs, results, transcripts, run plans; docs/design/storage.md); ``redact_personal_mapping``
walks JSON values with it (keys kept). Checked patterns keep false positives down: an order
number of 16 digits that fails Luhn stays.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from backstay._secret_values import MIN_SECRET_LEN, SECRETS

__all__ = [
    "REDACTED",
    "redact",
    "redact_mapping",
    "redact_personal",
    "redact_personal_mapping",
    "register_secret",
]

REDACTED: Final = "[REDACTED]"
EMAIL: Final = "[EMAIL]"
PHONE: Final = "[PHONE]"
CARD: Final = "[CARD]"
IBAN: Final = "[IBAN]"
JWT: Final = "[JWT]"

_MIN_SECRET_LEN: Final = MIN_SECRET_LEN

# Mapping keys whose values are secrets. Anchored, so ``input_tokens`` or
# ``idempotency_key`` stay readable.
_SECRET_KEY = re.compile(
    r"(?i)(^|[_\-.])(api[_\-]?key|apikey|access[_\-]?key|secret[_\-]?key|private[_\-]?key|"
    r"token|access[_\-]?token|refresh[_\-]?token|auth[_\-]?token|secret|client[_\-]?secret|"
    r"password|passwd|credentials?|authorization|proxy-authorization|cookie|set-cookie|"
    r"x-api-key|x-goog-api-key)$|^key$"
)

# A token starts after a non-alphanumeric character, or right after a URL (%3D) or JSON
# (\u0022) escape, where a key glued to encoded text would otherwise slip through.
_START = r"(?:(?<![A-Za-z0-9])|(?<=%[0-9A-Fa-f]{2})|(?<=\\u[0-9A-Fa-f]{4}))"

# Order matters: whole tokens first, then header/field values that may wrap them.
_PATTERNS: Final[tuple[tuple[re.Pattern[str], str], ...]] = (
    # Anthropic (sk-ant-api03-…, sk-ant-oat01-…), OpenAI (sk-…, sk-proj-…, sk-svcacct-…).
    (re.compile(_START + r"sk-(?:ant-)?[A-Za-z0-9_\-]{12,}"), REDACTED),
    # Google API keys and OAuth access tokens.
    (re.compile(_START + r"AIza[0-9A-Za-z_\-]{20,}"), REDACTED),
    (re.compile(_START + r"ya29\.[0-9A-Za-z_\-.]{10,}"), REDACTED),
    # GitHub and Slack-style tokens, JWTs.
    (
        re.compile(_START + r"(?:gh[pousr]_[A-Za-z0-9]{20,}|xox[abpr]-[A-Za-z0-9\-]{10,})"),
        REDACTED,
    ),
    (re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{4,}"), REDACTED),
    # Bearer / Basic credentials wherever they appear.
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=\-]{6,}"), r"\1 " + REDACTED),
    # Header lines and JSON / key=value fields with credential names.
    (
        re.compile(
            r"(?i)((?<![\w-])[\"']?(?:x-api-key|x-goog-api-key|api-key|authorization|proxy-authorization|"
            r"openai-api-key|anthropic-api-key|cookie|set-cookie)[\"']?\s*[:=]\s*[\"']?)"
            r"(?!(?:bearer|basic)\s+\[REDACTED\])([^\s\"',;}&]{4,})"
        ),
        r"\1" + REDACTED,
    ),
    (
        re.compile(
            r"(?i)((?<![\w-])[\"']?(?:api[_-]?key|apikey|access[_-]?token|refresh[_-]?token|id[_-]?token|"
            r"auth[_-]?token|client[_-]?secret|secret|password|token)[\"']?\s*[:=]\s*[\"']?)"
            r"([^\s\"',;}&]{6,})"
        ),
        r"\1" + REDACTED,
    ),
    # Passwords in URLs: postgres://user:secret@host, https://user:token@proxy.
    (
        re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://[^\s:/@\"']+:)([^\s@/\"']+)(@)"),
        r"\1" + REDACTED + r"\3",
    ),
    # Query strings: ?key=…&
    (
        re.compile(r"(?i)([?&](?:key|api_key|apikey|access_token|token|sig)=)[^&\s\"']+"),
        r"\1" + REDACTED,
    ),
)


# Every pattern above contains one of these (lower-cased) words: text without any of them
# is clean, and a few substring tests replace nine substitutions on the common path.
_TRIGGERS: Final = (
    "sk-",
    "aiza",
    "ya29.",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "xoxa-",
    "xoxb-",
    "xoxp-",
    "xoxr-",
    "eyj",
    "bearer",
    "basic",
    "key",
    "token",
    "secret",
    "passw",
    "authorization",
    "cookie",
    "sig=",
    "://",
)


_secrets: Final = SECRETS


def register_secret(value: str) -> None:
    """Make ``redact`` remove ``value`` from every text from now on (short values are ignored)."""
    if isinstance(value, str) and len(value) >= _MIN_SECRET_LEN:
        _secrets.register(value)


def redact(text: object) -> str:
    """``text`` (or its ``str``) with every secret replaced by ``[REDACTED]``. Never raises."""
    try:
        out = text if isinstance(text, str) else str(text)
    except Exception:  # a broken __str__ must not break the caller's error path
        return f"<unprintable {type(text).__name__}>"
    secrets = _secrets.current()
    if len(out) <= _CACHED_TEXT_LEN:
        return _redact_cached(out, secrets)  # the secrets are part of the key
    return _redact(out, secrets)


# The words (lower-cased) one of which every match of each pattern of ``_PATTERNS``
# contains, in the same order: a pattern runs only on a text holding one of its words (a
# replacement only adds ``[REDACTED]``, which holds none, so a text a pattern changes
# held its word before). ``_TRIGGERS`` is their union.
_PATTERN_WORDS: Final[tuple[tuple[str, ...], ...]] = (
    ("sk-",),
    ("aiza",),
    ("ya29.",),
    ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "xoxa-", "xoxb-", "xoxp-", "xoxr-"),
    ("eyj",),
    ("bearer", "basic"),
    ("api-key", "authorization", "cookie"),
    ("key", "token", "secret", "passw"),
    ("://",),
    ("key=", "token=", "sig="),
)
# Searched for, on an ASCII text holding a pattern's words, before the pattern runs: a
# text the generic credential pattern (the eighth) changes names one of its fields right
# before ``:`` or ``=``, and each field ends with key, token, secret or password. Finding
# that is a few microseconds on a line that merely says "tokens", where running the
# pattern took tens. Case-insensitive matching of an ASCII text is matching its lowered
# form; another text (where a character like the long s folds to an ASCII letter) skips
# the search.
_ASSIGNED: Final = re.compile(r"(?:key|token|secret|password)[\"']?\s*[:=]")
_PATTERN_GATES: Final[tuple[re.Pattern[str] | None, ...]] = (
    *(None,) * 7,
    _ASSIGNED,
    *(None,) * 2,
)
_WORDED_PATTERNS: Final = tuple(
    (pattern, replacement, words, gate)
    for (pattern, replacement), words, gate in zip(
        _PATTERNS, _PATTERN_WORDS, _PATTERN_GATES, strict=True
    )
)


def _redact(out: str, secrets: tuple[str, ...]) -> str:
    """``out`` with every known secret and every pattern's match replaced. The lowered
    text is made once, before any pattern runs, and each pattern's words are looked for
    in it at most once (the first found trigger word says a pattern may match; the words
    of later patterns are remembered as they are asked), so a line holding several
    patterns' words is not searched again for each."""
    for secret in secrets:
        if secret in out:
            out = out.replace(secret, REDACTED)
    lowered = out.lower()
    index = next((i for i, word in enumerate(_TRIGGERS) if word in lowered), -1)
    if index < 0:
        return out  # nothing any pattern could match
    seen = dict.fromkeys(_TRIGGERS[:index], False)
    seen[_TRIGGERS[index]] = True
    ascii_only = out.isascii()
    for pattern, replacement, words, gate in _WORDED_PATTERNS:
        for word in words:
            found = seen.get(word)
            if found is None:
                found = seen[word] = word in lowered
            if found:
                break
        else:
            continue  # none of the pattern's words
        if gate is None or not ascii_only or gate.search(lowered):
            out = pattern.sub(replacement, out)
    return out


# Error messages repeat; short ones are redacted once per set of known secrets.
_CACHED_TEXT_LEN: Final = 4096
_redact_cached = functools.lru_cache(maxsize=4096)(_redact)


@functools.lru_cache(maxsize=1024)  # keys repeat: an event's fields, a result's
def _looks_secret(key: object) -> bool:
    return isinstance(key, str) and bool(_SECRET_KEY.search(key))


def _walk(value: Any, text: Callable[[object], str], depth: int) -> Any:
    """A copy of a JSON-like ``value`` with ``text`` applied to every string (and to any
    other object, which it reads as its ``str``) and the value of any key whose name looks secret
    blanked; nesting deeper than 20 levels is cut to ``…``."""
    if depth > 20:
        return "…"
    if isinstance(value, Mapping):
        return {
            str(k): (
                REDACTED if _looks_secret(k) and v not in (None, "") else _walk(v, text, depth + 1)
            )
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [_walk(v, text, depth + 1) for v in value]
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return text(value)


def redact_mapping(value: Any) -> Any:
    """A copy of ``value`` (mapping, list, tuple, scalar) with every secret redacted."""
    return _walk(value, redact, 0)


# -- personal and payment data -------------------------------------------------------------

_EMAIL_RE = re.compile(
    r"(?<![\w.+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"
)
_JWT_RE = re.compile(r"\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}")
# Neither pattern starts or ends inside a decimal number (the digits after "4." of a float).
# Card numbers start with 2-6 (the issuers' ranges): a millisecond timestamp is no card.
_CARD_RE = re.compile(r"(?<![\d-])(?<!\d\.)(?=[2-6])(?:\d[ -]?){12,18}\d(?![\d-])(?!\.\d)")
_IBAN_RE = re.compile(r"\b[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]){11,30}\b")
_PHONE_RE = re.compile(
    r"(?<![\w+])(?<!\d\.)(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,4}\)[ .-]?)?\d{2,4}(?:[ .-]\d{2,4}){1,4}"
    r"(?!\w)(?!\.\d)"
)
_DIGITS = re.compile(r"\d")
_UUID_RE = re.compile(
    r"(?<![0-9A-Za-z])[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
    r"[0-9a-fA-F]{12}(?![0-9A-Za-z])"
)
# What each of the three patterns' matches holds, searched for before it runs (a search
# from a fixed start costs a fraction of the pattern's own look-behinds at every place):
# an IBAN's two capitals and two digits, a card number's first digit and twelve more, a
# phone number's first two groups of digits.
_IBAN_GATE = re.compile(r"[A-Z]{2}\d\d")
_CARD_GATE = re.compile(r"[2-6](?:[ -]?\d){12}")
_PHONE_GATE = re.compile(r"\d\d[ .-]\d\d")


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


def personal_data(text: str) -> str:
    """``text`` with e-mail addresses, IBANs, card numbers and phone numbers replaced
    (nothing else: ``redact_personal`` adds credentials and JWTs)."""
    if "@" in text:
        text = _EMAIL_RE.sub(EMAIL, text)
    if not _DIGITS.search(text):
        return text  # the other three all hold digits
    if "-" not in text or _UUID_RE.search(text) is None:
        return _numbers(text)
    # A UUID is an identifier, not personal data: its all-digit groups
    # (``973b247a-4012-8123-…``) are no phone or card number, and a session id read back
    # from a log must stay whole. The numbers are looked for between the UUIDs.
    parts: list[str] = []
    end = 0
    for found in _UUID_RE.finditer(text):
        parts += (_numbers(text[end : found.start()]), found.group())
        end = found.end()
    parts.append(_numbers(text[end:]))
    return "".join(parts)


def _numbers(text: str) -> str:
    """``text`` with IBANs, card numbers and phone numbers replaced."""
    if _IBAN_GATE.search(text):
        text = _IBAN_RE.sub(_iban, text)
    if _CARD_GATE.search(text):
        text = _CARD_RE.sub(_card, text)
    if _PHONE_GATE.search(text):
        text = _PHONE_RE.sub(_phone, text)
    return text


def redact_personal(text: object) -> str:
    """``redact(text)`` with personal and payment data replaced as well. Never raises."""
    out = text if isinstance(text, str) else redact(text)
    if len(out) <= _CACHED_PERSONAL_LEN:
        return _redact_personal_cached(out, _secrets.current())  # the secrets are in the key
    return _redact_personal(out)


def _redact_personal(out: str, secrets: tuple[str, ...] | None = None) -> str:
    if "eyJ" in out:  # before ``redact``, whose own JWT pattern would say [REDACTED]
        out = _JWT_RE.sub(JWT, out)
    return personal_data(redact(out))


# Short texts repeat (an event's operation id, adapter and model; a result's keys): they
# are redacted once per set of known secrets.
_CACHED_PERSONAL_LEN: Final = 256
_redact_personal_cached = functools.lru_cache(maxsize=4096)(_redact_personal)


def redact_personal_mapping(value: Any) -> Any:
    """A copy of a JSON value (mapping, list, tuple, scalar) with every string passed
    through ``redact_personal`` and the value of any key whose name looks secret blanked.

    A ``dict`` (an event's fields, a result, a failure's details) is walked by ``_fields``:
    a value that is exactly a ``str``, a number or ``None`` is handled where it stands, and
    a nested ``dict`` the same way, instead of asking the abstract ``Mapping`` about each;
    anything else takes ``_walk`` at the depth it would have reached there."""
    if type(value) is dict:
        return _fields(value, 0)
    return _walk(value, redact_personal, 0)


def _fields(fields: Mapping[Any, Any], depth: int) -> dict[str, Any]:
    """``_walk(fields, redact_personal, depth)`` for a mapping at ``depth`` below 20 (its
    values, one level down, are never cut to ``…``). A short string goes to
    ``redact_personal``'s cache directly, with the secrets known when the walk began."""
    out: dict[str, Any] = {}
    inner = depth + 1
    secrets = _secrets.current()
    for key, given in fields.items():
        kind = type(given)
        value: Any = given
        if kind is str:
            if given != "" and _looks_secret(key):
                value = REDACTED
            elif len(given) <= _CACHED_PERSONAL_LEN:
                value = _redact_personal_cached(given, secrets)
            else:
                value = _redact_personal(given)
        elif given is None:
            pass
        elif kind is int or kind is float or kind is bool:
            if _looks_secret(key):
                value = REDACTED
        elif _looks_secret(key) and given not in (None, ""):
            value = REDACTED
        elif kind is dict and inner < 20:
            value = _fields(given, inner)
        else:
            value = _walk(given, redact_personal, inner)
        out[key if type(key) is str else str(key)] = value
    return out


def redact_once(text: str) -> str:
    """``redact(text)`` for a text seen once (a log line holding a fresh time stamp): the
    same result, without the cache of short texts, which a text never asked again would
    only fill, pushing out the error messages that do repeat."""
    return _redact(text, _secrets.current())
