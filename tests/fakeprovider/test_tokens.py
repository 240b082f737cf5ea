"""The documented token approximation and the stream pieces."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from backstay.fakeprovider import count_tokens
from backstay.fakeprovider.tokens import split_pieces


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("", 0),
        ("   ", 0),
        ("Hello, world!", 6),
        ("The cat sat.", 4),
        ("internationalization", 5),
        ("a b c", 3),
    ],
)
def test_count_tokens_counts_pieces_by_four_characters(text: str, tokens: int) -> None:
    assert count_tokens(text) == tokens


@given(st.text())
def test_the_pieces_join_back_to_the_text_and_keep_its_count(text: str) -> None:
    pieces = split_pieces(text)
    assert "".join(pieces) == text
    assert sum(map(count_tokens, pieces)) == count_tokens(text)
