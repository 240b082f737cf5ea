"""``redact_personal``: credentials and personal data out of what is kept at rest."""

from __future__ import annotations

import pytest

from backstay.redact import EMAIL, PHONE, personal_data, redact_personal, redact_personal_mapping


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("write to jane.canary@example.com now", "write to [EMAIL] now"),
        ("card 4111 1111 1111 1111.", "card [CARD]."),
        ("IBAN DE89 3704 0044 0532 0130 00", "IBAN [IBAN]"),
        ("call +44 20 7946 0958", "call [PHONE]"),
        ("key sk-ant-api03-abcdefghijklmnopqrstuvwxyz", "key [REDACTED]"),
        ("order 1234567812345678 ships", "order 1234567812345678 ships"),  # fails Luhn
        ("on 2026-11-28 at 10:00", "on 2026-11-28 at 10:00"),
        ("say hello", "say hello"),
    ],
)
def test_personal_data_and_credentials_are_replaced(text: str, expected: str) -> None:
    assert redact_personal(text) == expected


def test_a_mapping_keeps_its_keys_and_blanks_secret_ones() -> None:
    value = {"to": ["a.b@example.org"], "n": 3, "api_key": "abc", "ok": True}
    assert redact_personal_mapping(value) == {
        "to": ["[EMAIL]"],
        "n": 3,
        "api_key": "[REDACTED]",
        "ok": True,
    }


def test_what_is_not_text_is_redacted_as_its_str_and_never_raises() -> None:
    class Broken:
        def __str__(self) -> str:
            raise RuntimeError("no")

    assert redact_personal(Broken()) == "<unprintable Broken>"
    assert redact_personal(12) == "12"


@pytest.mark.parametrize(
    "text",
    [
        '{"wait_s": 4.4111111111111111}',  # a float's digits, Luhn-valid by chance
        "took 1764320000003 ms",  # a millisecond timestamp, Luhn-valid
        "x 4.123 456 7890",
    ],
)
def test_numbers_that_are_not_cards_or_phones_stay(text: str) -> None:
    assert redact_personal(text) == text


@pytest.mark.parametrize(
    "uuid",
    [
        "973b247a-4012-8123-9876-83078d34dcef",  # all-digit middle groups: no phone number
        "12345678-1234-1234-1234-123456789012",  # all digits: no card or phone number
    ],
)
def test_a_uuid_stays_whole_and_the_numbers_beside_it_are_still_replaced(uuid: str) -> None:
    text = f"session {uuid} started; call +1 415 555 0100 or mail a@b.example"
    assert personal_data(text) == f"session {uuid} started; call {PHONE} or mail {EMAIL}"
    assert personal_data(f"{uuid}-555-123-4567") == f"{uuid}-{PHONE}"
