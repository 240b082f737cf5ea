"""``redact_personal_mapping``'s walk of a ``dict`` (``_fields``) and ``redact_once``, the
faster forms of the general walk (``_walk``) and ``redact``: the same result on every
input, checked against them on many generated values and texts (secrets, personal data,
secret-looking keys with every kind of value, nesting past the cut at 20 levels, registered
secrets, long texts)."""

from __future__ import annotations

import enum
import importlib
import json
import random
from typing import Any

import pytest

from backstay.redact import (
    redact,
    redact_once,
    redact_personal_mapping,
    register_secret,
)

_redact_module = importlib.import_module("backstay.redact")


def _walked(value: Any) -> Any:
    """The general walk every value took before a ``dict`` had its own."""
    return _redact_module._walk(value, _redact_module.redact_personal, 0)


CANARY = "canary-value-fields-0123456789"

TEXTS = [
    "",
    "plain",
    "anthropic-api",
    "cpu-20261129T024625Z-68f56a:t0:T0-run_01:attempt_1",
    "mail jane.doe@example.com now",
    "call +44 20 7946 0958",
    "card 4111 1111 1111 1111",
    "IBAN DE89 3704 0044 0532 0130 00",
    "sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
    "Authorization: Bearer abcdefghijkl",
    "token: \nabcdefgh",
    "password=hunter2hunter2",
    "https://user:pass1234@proxy.example.com/x",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJl",
    "id 973b247a-4012-8123-9abc-0123456789ab and 555 123 4567",
    f"a registered {CANARY} inside",
    "caf\u00e9 sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
    "x" * 5000 + " key=abcdefgh",
]
KEYS = ["event", "operation", "api_key", "token", "x-api-key", "input_tokens", "secret", 7, "key"]


class Kind(enum.StrEnum):
    A = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz"


class Count(enum.IntEnum):
    ONE = 1


class Text(str):
    pass


def _value(rng: random.Random, depth: int) -> Any:
    roll = rng.random()
    if roll < 0.3:
        return rng.choice(TEXTS)
    if roll < 0.45:
        return rng.choice([None, 0, 1, -3, 0.5, float("inf"), True, False, 10**20])
    if roll < 0.5:
        return rng.choice([Kind.A, Count.ONE, Text("jane.doe@example.com"), b"bytes", object])
    if depth > 24:
        return rng.choice(TEXTS)
    if roll < 0.8:
        return {rng.choice(KEYS): _value(rng, depth + 1) for _ in range(rng.randint(0, 4))}
    items = [_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return items if rng.random() < 0.5 else tuple(items)


def _deep(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": "jane.doe@example.com", "n": 1, "none": None}
    for level in range(levels):
        value = {"down": value, "token": level, "at": "x"}
    return value


@pytest.fixture(autouse=True)
def _canary() -> None:
    register_secret(CANARY)


def test_the_fields_are_redacted_as_the_mapping_walk_redacts_them() -> None:
    rng = random.Random(20261129)
    for _ in range(3000):
        fields = {rng.choice(KEYS): _value(rng, 1) for _ in range(rng.randint(0, 8))}
        assert redact_personal_mapping(fields) == _walked(fields), fields


@pytest.mark.parametrize("levels", [0, 1, 18, 19, 20, 21, 22, 30])
def test_nesting_is_cut_at_the_same_depth(levels: int) -> None:
    fields = _deep(levels)
    assert redact_personal_mapping(fields) == _walked(fields)


@pytest.mark.parametrize("key", ["token", "api_key", "secret", "operation"])
@pytest.mark.parametrize("value", [None, "", 0, 0.0, False, True, "x", [], {}, (), Count.ONE])
def test_secret_looking_keys_are_blanked_for_the_same_values(key: str, value: object) -> None:
    fields = {key: value, "nested": {key: value}}
    out = redact_personal_mapping(fields)
    assert out == _walked(fields)
    assert json.dumps(out, default=str) == json.dumps(_walked(fields), default=str)


def test_values_keep_their_types_and_the_strings_are_redacted() -> None:
    fields = {"operation": "wf:jane.doe@example.com:r", "attempt": 1, "duration_s": 0.25}
    out = redact_personal_mapping(fields)
    assert out == {"operation": "wf:[EMAIL]:r", "attempt": 1, "duration_s": 0.25}
    assert type(out["attempt"]) is int


def test_a_line_redacted_once_is_what_redact_gives() -> None:
    rng = random.Random(7)
    for _ in range(2000):
        parts = [rng.choice(TEXTS) for _ in range(rng.randint(1, 4))]
        line = json.dumps({"at": "2026-11-29T02:46:25+00:00", "parts": parts, "n": rng.random()})
        assert redact_once(line) == redact(line)
        assert redact_once(" ".join(parts)) == redact(" ".join(parts))


WORDS = [
    "sk-", "aiza", "ya29.", "ghp_", "xoxb-", "eyj", "bearer ", "basic ", "api-key:", "key",
    "token", "secret", "passw", "authorization:", "cookie=", "sig=", "://", "key=", "token=",
    "Token: ", "\u00e9", "\u017f", "=", ":", "\"", " ", "abcdefghijklmn0123",
]  # fmt: skip


def test_a_line_of_any_words_redacted_once_is_what_redact_gives() -> None:
    """Texts made of the patterns' words, each pattern's alone and mixed, in any order:
    the words looked for once decide as looking for them again did."""
    rng = random.Random(11)
    for _ in range(5000):
        text = "".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12)))
        assert redact_once(text) == redact(text), text


def test_a_line_redacted_once_stays_out_of_the_cache() -> None:
    line = json.dumps({"at": "2026-11-29T02:46:25.123456+00:00", "token": "abcdefghijkl"})
    before = _redact_module._redact_cached.cache_info()
    redact_once(line)
    assert _redact_module._redact_cached.cache_info() == before
