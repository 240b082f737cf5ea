"""The searches ``redact`` and ``personal_data`` make before a pattern runs
(``_ASSIGNED`` for the generic credential pattern, ``_IBAN_GATE``, ``_CARD_GATE`` and
``_PHONE_GATE``): the same text out as running every pattern, for less."""

from __future__ import annotations

import importlib
import random

import pytest

module = importlib.import_module("backstay.redact")

# The generic credential pattern, the one ``_ASSIGNED`` stands before.
GENERIC = 7


def _every_pattern(text: str) -> str:
    """``_redact`` with no search before a pattern: each runs when one of its words is in."""
    lowered = text.lower()
    if not any(word in lowered for word in module._TRIGGERS):
        return text
    for (pattern, replacement), words in zip(module._PATTERNS, module._PATTERN_WORDS, strict=True):
        if any(word in lowered for word in words):
            text = pattern.sub(replacement, text)
    return text


def _every_personal(text: str) -> str:
    """``personal_data`` with no search before its three patterns."""
    if "@" in text:
        text = module._EMAIL_RE.sub(module.EMAIL, text)
    if not module._DIGITS.search(text):
        return text
    text = module._IBAN_RE.sub(module._iban, text)
    text = module._CARD_RE.sub(module._card, text)
    return module._PHONE_RE.sub(module._phone, text)


PIECES = (
    '{"client_secret": "s3cr3tvalue!"}',
    "password=hunter2222",
    "PASSWORD : 'hunter2222'",
    "api_key\t=\nabcdef123456",
    'token"  :  "abcdefgh"',
    "refresh-token=abcdefghij",
    "x-api-key: abcdef123456",
    # A long s folds to "s" in the pattern's case-insensitive match, not in ``lower()``.
    "paſſword: hunter2222",
    "toKen: abcdefghij",  # the Kelvin sign folds to "k"
    '"usage": {"input_tokens": 3, "output_tokens": 8}',
    "3 prompt + 8 output tokens",
    "key from ANTHROPIC_API_KEY",
    "the token is",
    "secret",
    "DE89 3704 0044 0532 0130 00",
    "GB82WEST12345698765432",
    "4111 1111 1111 1111",
    "4111-1111-1111-1111",
    "5555555555554444",
    "+1 555 123 4567",
    "(030) 1234 5678",
    "0151 2345 6789",
    "2026-11-28T23:39:41.901+00:00",
    "cpu-20261128T233934Z-3fe63c:t0:T0-run_366:attempt_1",
    "cost: 0.000129 USD",
    "duration_s 12.34",
    "mail me@example.com",
    "١٢٣٤٥٦٧٨٩٠١٢٣",  # digits of another script: ``\\d`` takes them too
    "\n",
)


def _texts(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    return [
        rng.choice(("", " ", ", ", "\n")).join(rng.choice(PIECES) for _ in range(rng.randint(1, 5)))
        for _ in range(count)
    ]


def test_the_assignment_search_stands_before_the_generic_pattern_only() -> None:
    gates = [gate for *_, gate in module._WORDED_PATTERNS]
    assert gates[GENERIC] is module._ASSIGNED
    assert [g for i, g in enumerate(gates) if i != GENERIC] == [None] * (len(gates) - 1)


@pytest.mark.parametrize(
    "text",
    [
        '{"client_secret": "s3cr3tvalue!"}',
        "password=hunter2222",
        "paſſword: hunter2222 and a token",
        "toKen: abcdefghij and a key",
    ],
)
def test_an_assignment_is_redacted_as_before(text: str) -> None:
    assert module._redact(text, ()) == _every_pattern(text) != text


def test_a_text_that_only_mentions_tokens_is_left_as_it_was() -> None:
    text = '{"usage": {"input_tokens": 3, "output_tokens": 8}}, key from ANTHROPIC_API_KEY'
    assert module._ASSIGNED.search(text.lower()) is None
    assert module._redact(text, ()) == _every_pattern(text) == text


def test_texts_are_redacted_as_by_every_pattern() -> None:
    """Mixed texts (seeded, 600 of them): each comes out as running every pattern gives."""
    for text in _texts(24, 600):
        assert module._redact(text, ()) == _every_pattern(text), text


def test_personal_data_is_replaced_as_by_every_pattern() -> None:
    """Mixed texts (seeded, 600 of them): each comes out as its three patterns give."""
    changed = 0
    for text in _texts(25, 600):
        expected = _every_personal(text)
        assert module.personal_data(text) == expected, text
        changed += expected != text
    assert changed > 100  # the corpus holds numbers each pattern replaces


@pytest.mark.parametrize(
    ("text", "mark"),
    [
        ("pay to DE89 3704 0044 0532 0130 00 today", module.IBAN),
        ("card 4111 1111 1111 1111 on file", module.CARD),
        ("call +1 555 123 4567", module.PHONE),
    ],
)
def test_each_kind_of_number_is_still_replaced(text: str, mark: str) -> None:
    assert mark in module.personal_data(text)
