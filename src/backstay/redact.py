"""Redaction: the one function every path that lets text out goes through.

``redact(text)`` removes API keys and tokens of Anthropic, OpenAI and Google, bearer
tokens, the values of credential headers (``x-api-key``, ``authorization``,
``x-goog-api-key`` …), credential fields in JSON and query strings, the values of
environment variables whose names look secret, and any value registered with
``register_secret``. ``redact_mapping`` does the same through nested mappings and
sequences, and blanks the value of any key whose name looks secret.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any, Final

from backstay._secret_values import MIN_SECRET_LEN, SECRETS

__all__ = ["REDACTED", "redact", "redact_mapping", "register_secret"]

REDACTED: Final = "[REDACTED]"

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


def _redact(out: str, secrets: tuple[str, ...]) -> str:
    for secret in secrets:
        if secret in out:
            out = out.replace(secret, REDACTED)
    lowered = out.lower()
    if not any(word in lowered for word in _TRIGGERS):
        return out  # nothing any pattern could match
    for pattern, replacement in _PATTERNS:
        out = pattern.sub(replacement, out)
    return out


# Error messages repeat; short ones are redacted once per set of known secrets.
_CACHED_TEXT_LEN: Final = 4096
_redact_cached = functools.lru_cache(maxsize=4096)(_redact)


def _looks_secret(key: object) -> bool:
    return isinstance(key, str) and bool(_SECRET_KEY.search(key))


def redact_mapping(value: Any, *, _depth: int = 0) -> Any:
    """A copy of ``value`` (mapping, list, tuple, scalar) with every secret redacted."""
    if _depth > 20:
        return "…"
    if isinstance(value, Mapping):
        return {
            str(k): (
                REDACTED
                if _looks_secret(k) and v not in (None, "")
                else redact_mapping(v, _depth=_depth + 1)
            )
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [redact_mapping(v, _depth=_depth + 1) for v in value]
    if isinstance(value, str):
        return redact(value)
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return redact(value)
