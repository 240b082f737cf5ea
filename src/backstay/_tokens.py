"""A documented, deterministic token count: the one the fake provider charges, and the one
spending budgets estimate a prompt with (docs/budgets.md).

Text is cut into words (runs of letters, digits and ``_``) and single other non-space
characters; each piece counts one token per started 4 characters. ``"The cat sat."`` is
4 tokens, ``"Hello, world!"`` 6; ``"internationalization"`` (20 characters) is 5. Real
tokenizers count English prose at about the same rate (a token per short word), and
code and unusual text higher or lower.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["count_tokens"]

_PIECES: Final = re.compile(r"\w+|[^\w\s]")
_CHARS_PER_TOKEN: Final = 4


def count_tokens(text: str) -> int:
    """The token count of ``text`` (0 for an empty or blank text)."""
    return sum(-(-len(piece) // _CHARS_PER_TOKEN) for piece in _PIECES.findall(text))
