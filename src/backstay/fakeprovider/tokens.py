"""The fake provider's tokenizer: a documented, deterministic approximation.

Text is cut into words (runs of letters, digits and ``_``) and single other non-space
characters; each piece counts one token per started 4 characters. ``"The cat sat."`` is
4 tokens, ``"Hello, world!"`` 6; ``"internationalization"`` (20 characters) is 5. The count
is ``backstay._tokens.count_tokens``, which spending budgets estimate prompts with.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

from backstay._tokens import count_tokens

__all__ = ["count_tokens", "split_pieces"]


def count_all(texts: Iterable[str]) -> int:
    return sum(count_tokens(t) for t in texts)


_WORDS: Final = re.compile(r"\S+\s*")


def split_pieces(text: str, words_per_piece: int = 3) -> list[str]:
    """``text`` in consecutive pieces of a few words (with their spacing) for streaming;
    joined, they give ``text`` back exactly."""
    leading = text[: len(text) - len(text.lstrip())]
    words = _WORDS.findall(text)
    pieces = [
        "".join(words[i : i + words_per_piece]) for i in range(0, len(words), words_per_piece)
    ]
    if not pieces:
        return [text] if text else []
    pieces[0] = leading + pieces[0]
    return pieces
