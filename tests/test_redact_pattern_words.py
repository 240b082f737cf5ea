"""``redact`` runs each credential pattern only on a text holding one of its words
(``_PATTERN_WORDS``): the same text out as running every pattern, for less."""

from __future__ import annotations

import importlib
import random

import pytest

from backstay.redact import REDACTED, redact

module = importlib.import_module("backstay.redact")

# One text per pattern of ``_PATTERNS``, in their order, that the pattern changes.
SAMPLES = (
    "key sk-ant-api03-abcdefghijklmnopqrstuv here",
    "AIzaSyA1234567890abcdefghijklmnopqrs",
    "ya29.a0AfH6SMBabcdefghijk",
    "ghp_abcdefghijklmnopqrstuvwxyz0123 and xoxb-1234567890-abcdef",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
    "Authorization: Bearer abcdefghijklmnop",
    "X-Api-Key: abcdef123456",
    '{"client_secret": "s3cr3tvalue!"}',
    "postgres://user:hunter22@db.example.com/x",
    "https://example.com/v1?key=abcdef123&x=1",
)


def _every_pattern(text: str) -> str:
    """What ``redact`` gave before: every pattern run whenever any word is present."""
    lowered = text.lower()
    if not any(word in lowered for word in module._TRIGGERS):
        return text
    for pattern, replacement in module._PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def test_every_pattern_has_words_that_the_global_check_covers() -> None:
    assert len(module._PATTERN_WORDS) == len(module._PATTERNS)
    for words in module._PATTERN_WORDS:
        assert words
        for word in words:
            assert word == word.lower()
            assert any(trigger in word for trigger in module._TRIGGERS), word


@pytest.mark.parametrize("index", range(len(SAMPLES)))
def test_each_sample_is_changed_by_its_pattern_and_holds_its_word(index: int) -> None:
    pattern, replacement = module._PATTERNS[index]
    text = SAMPLES[index]
    assert pattern.sub(replacement, text) != text
    for match in pattern.finditer(text):
        assert any(w in match.group().lower() for w in module._PATTERN_WORDS[index])
    assert REDACTED in redact(text)


def test_texts_are_redacted_as_by_every_pattern() -> None:
    """Mixed texts (seeded, 400 of them): each comes out as running every pattern gives."""
    pieces = [
        *SAMPLES,
        "prompt_tokens: 12",
        '"usage": {"input_tokens": 3}',
        "plain words only",
        "the token is",
        "password=",
        "basic",
        "https://example.com/path",
        "cpu-20261128T142611Z-079bb3:t0",
        "Bearer [REDACTED]",
        "\n",
    ]
    rng = random.Random(24)
    for _ in range(400):
        text = " ".join(rng.choice(pieces) for _ in range(rng.randint(1, 5)))
        assert module._redact(text, ()) == _every_pattern(text), text
