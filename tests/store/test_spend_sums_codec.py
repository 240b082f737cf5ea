"""The sums' text form: what ``encode`` writes ``decode`` reads back exactly, whether it
remembers the text (this process wrote or read it lately) or parses it afresh."""

from __future__ import annotations

from fractions import Fraction

from backstay.store import _spend_sums as sums

VECTOR = (Fraction(0.000129), Fraction(11), Fraction(-3, 7), Fraction(0))


def test_a_vector_comes_back_exactly() -> None:
    text = sums.encode(VECTOR)
    assert sums.decode(text) == VECTOR
    assert sums.decode(text.encode()) == VECTOR  # as Redis returns it
    sums._KNOWN.clear()
    parsed = sums.decode(text)
    assert parsed == VECTOR
    assert [type(v) for v in parsed or ()] == [Fraction] * len(VECTOR)


def test_texts_written_elsewhere_are_parsed() -> None:
    sums._KNOWN.clear()
    assert sums.decode('["1/3", "5", "-2/4", "0.25"]') == (
        Fraction(1, 3),
        Fraction(5),
        Fraction(-1, 2),
        Fraction(1, 4),
    )
    assert sums.decode(None) is None


def test_the_memory_stays_bounded() -> None:
    sums._KNOWN.clear()
    for n in range(sums._KNOWN_MAX * 2 + 5):
        sums.encode((Fraction(n),))
    assert len(sums._KNOWN) <= sums._KNOWN_MAX
    assert sums.decode(sums.encode((Fraction(7, 9),))) == (Fraction(7, 9),)
