"""Field: the kinds of setting a file may hold, checked and rendered as JSON Schema alike."""

from __future__ import annotations

from backstay.config._fields import Field, check, json_schema

NAME = Field(type="string", pattern=r"^[a-z]+$", pattern_hint="lower-case letters", help="h")
SECRET = Field(type="string", pattern=r"^[A-Z_]+$", pattern_hint="a name", sensitive=True, help="h")
FLAG = Field(type="boolean", help="h")
NAMES = Field(type="strings", pattern=r"^[a-z]+$", pattern_hint="lower-case letters", help="h")


def test_a_pattern_limits_a_string() -> None:
    assert check(NAME, "abc") == []
    assert check(NAME, "a1") == [((), "must be lower-case letters, got 'a1'")]


def test_a_sensitive_value_is_never_repeated() -> None:
    assert check(SECRET, "sk-123") == [((), "must be a name")]
    assert check(SECRET, 5) == [((), "must be text, got 5")]
    assert check(SECRET, b"sk") == [((), "must be text, got a value not shown here")]


def test_a_boolean_is_true_or_false() -> None:
    assert check(FLAG, True) == []
    assert check(FLAG, "yes") == [((), "must be true or false, got 'yes'")]
    assert check(FLAG, 1) == [((), "must be true or false, got 1")]


def test_a_list_of_strings_checks_each_item() -> None:
    assert check(NAMES, ["a", "b"]) == []
    assert check(NAMES, ["a", "B", 3]) == [
        (("[1]",), "must be lower-case letters, got 'B'"),
        (("[2]",), "must be text, got 3"),
    ]
    assert check(NAMES, "a") == [((), "must be a list, got 'a'; write [a]")]


def test_the_new_kinds_render_as_json_schema() -> None:
    assert json_schema(NAME) == {"description": "h", "type": "string", "pattern": r"^[a-z]+$"}
    assert json_schema(FLAG) == {"description": "h", "type": "boolean"}
    assert json_schema(NAMES) == {
        "description": "h",
        "type": "array",
        "items": {"type": "string", "pattern": r"^[a-z]+$"},
    }
