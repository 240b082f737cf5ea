"""Key paths: ``retry.policies.standard.max_attempts`` ↔ ``("retry", "policies", …)``.

A part holding a dot (a rate-limit key such as ``openai/gpt-4.1``) is written in double
quotes: ``retry.rate_limits."openai/gpt-4.1".requests_per_minute``. A list item is written
``retry_on[2]`` and kept as the part ``"[2]"``.
"""

from __future__ import annotations

import re

from backstay.errors import ConfigError

Path = tuple[str, ...]

_PART = re.compile(r'"([^"]*)"|([^."]+)')
_NEEDS_QUOTES = re.compile(r'[.="\s]')


def parse_path(text: str, *, where: str) -> Path:
    """``'retry."a.b".c'`` → ``("retry", "a.b", "c")``; ``ConfigError`` if malformed."""
    parts: list[str] = []
    pos = 0
    while True:
        match = _PART.match(text, pos)
        if match is None or not (match.group(1) or match.group(2)):
            raise ConfigError(f"malformed key path {text!r}", where=where)
        parts.append(match.group(1) if match.group(1) is not None else match.group(2))
        pos = match.end()
        if pos == len(text):
            return tuple(parts)
        if text[pos] != ".":
            raise ConfigError(f"malformed key path {text!r}", where=where)
        pos += 1


def format_path(path: Path) -> str:
    """The dotted form of ``path``, quoting parts that need it."""
    out = ""
    for part in path:
        if part.startswith("[") and out:
            out += part
            continue
        text = f'"{part}"' if _NEEDS_QUOTES.search(part) or not part else part
        out = f"{out}.{text}" if out else text
    return out
