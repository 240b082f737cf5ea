from __future__ import annotations

import pytest

from backstay.runtime.sensitive import SensitiveRedactor, iban_valid, luhn_valid

CANARY = "sk-ant-api03-SENSITIVEcanary0123456789abcdefABCDEF"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("write to ann.lee+x@mail.example.co.uk now", "write to [EMAIL] now"),
        ("card 4111-1111-1111-1111 ok", "card [CARD] ok"),
        ("call +1 (415) 555-0100", "call [PHONE]"),
        ("IBAN DE89 3704 0044 0532 0130 00.", "IBAN [IBAN]."),
        ("token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJl", "token [JWT]"),
        (f"key {CANARY}", "key [REDACTED]"),
    ],
)
def test_sensitive_values_are_replaced(text: str, expected: str) -> None:
    assert SensitiveRedactor()(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "order 4111 1111 1111 1112 shipped",  # fails the Luhn check
        "account DE00 3704 0044 0532 0130 00",  # fails the mod-97 check
        "released 2024-01-15, version 1.2.3, 12345 rows",
    ],
)
def test_lookalikes_that_fail_their_checks_stay(text: str) -> None:
    assert SensitiveRedactor()(text) == text


def test_user_patterns_are_redacted_too() -> None:
    assert SensitiveRedactor([r"ACME-\d{4}"])("case ACME-1234 open") == "case [REDACTED] open"


def test_mapping_redacts_every_string_of_a_json_value() -> None:
    value = {"to": ["bob@example.com"], "n": 3}
    assert SensitiveRedactor().mapping(value) == {"to": ["[EMAIL]"], "n": 3}


def test_the_checks() -> None:
    assert luhn_valid("4111111111111111")
    assert not luhn_valid("4111111111111112")
    assert iban_valid("GB82 WEST 1234 5698 7654 32")
    assert not iban_valid("GB00 WEST 1234 5698 7654 32")
