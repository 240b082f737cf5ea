"""Records and results: results are JSON objects, checked before anything is stored."""

from __future__ import annotations

import math

import pytest

from backstay.errors import ConfigError
from backstay.idempotency.records import CachedResult, decode_result, encode_result


def test_a_result_is_encoded_as_compact_json() -> None:
    assert encode_result({"a": [1, "é"], "b": None}) == '{"a":[1,"é"],"b":null}'


@pytest.mark.parametrize(
    "result",
    [[1, 2], "text", None],
    ids=["list", "str", "none"],
)
def test_a_result_that_is_not_a_mapping_is_refused(result: object) -> None:
    with pytest.raises(ConfigError, match="must be a mapping") as info:
        encode_result(result)  # type: ignore[arg-type]
    assert info.value.where == "result"


def test_a_result_with_a_key_that_is_not_a_string_is_refused() -> None:
    with pytest.raises(ConfigError, match="keys must be strings"):
        encode_result({1: "one"})  # type: ignore[dict-item]


@pytest.mark.parametrize(
    "value", [math.nan, math.inf, object(), {1, 2}], ids=["nan", "inf", "object", "set"]
)
def test_a_result_json_cannot_represent_is_refused(value: object) -> None:
    with pytest.raises(ConfigError, match="JSON-serialisable"):
        encode_result({"value": value})


def test_decoding_something_other_than_an_object_fails() -> None:
    with pytest.raises(TypeError, match="JSON object"):
        decode_result("[1]")


def test_a_cached_result_decodes_a_new_dict_on_every_access() -> None:
    cached = CachedResult(
        operation_id="a:b:c",
        result_json='{"n":1}',
        owner="w1",
        generation=1,
        completed_at=0.0,
        expires_at=1.0,
    )
    assert cached.result == {"n": 1}
    assert cached.result is not cached.result
