"""A stored policy object is built once per distinct policy, with the same result."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.engine.support import QUICK, spec

from backstay.engine._spec_codec import decode_spec, encode_spec
from backstay.errors import ConfigError
from backstay.policy.retry import RetryPolicy


def test_specs_storing_the_same_policy_share_one_decoded_policy(tmp_path: Path) -> None:
    first = decode_spec(encode_spec(spec(tmp_path, task_id="a")), secrets={})[0]
    second = decode_spec(encode_spec(spec(tmp_path, task_id="b")), secrets={})[0]
    assert first.policy == QUICK
    assert second.policy is first.policy


def test_a_decoded_policy_equals_the_one_built_from_its_data(tmp_path: Path) -> None:
    other = RetryPolicy.from_dict({**QUICK.to_dict(), "max_attempts": 7, "name": "seven"})
    decoded = decode_spec(encode_spec(spec(tmp_path, policy=other)), secrets={})[0].policy
    assert decoded == other == RetryPolicy.from_dict(other.to_dict())
    assert decoded != QUICK


def test_key_order_does_not_make_another_policy(tmp_path: Path) -> None:
    text = encode_spec(spec(tmp_path))
    data = json.loads(text)
    data["policy"] = dict(reversed(list(data["policy"].items())))
    reordered = decode_spec(json.dumps(data), secrets={})[0].policy
    assert reordered is decode_spec(text, secrets={})[0].policy


def test_a_bad_stored_policy_is_refused_every_time(tmp_path: Path) -> None:
    data = json.loads(encode_spec(spec(tmp_path)))
    data["policy"]["max_attempts"] = 0
    for _ in range(2):  # an error is not remembered as a policy
        with pytest.raises(ConfigError, match="max_attempts"):
            decode_spec(json.dumps(data), secrets={})
