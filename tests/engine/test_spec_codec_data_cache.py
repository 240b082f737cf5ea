"""A spec's policy and tier are encoded once per object, with the same text as without."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from tests.engine.support import QUICK, spec

from backstay.adapters.contract import TierConfig
from backstay.engine import _spec_codec
from backstay.engine._spec_codec import encode_spec
from backstay.policy.retry import RetryPolicy


def test_a_shared_policy_and_tier_encode_as_their_own_data(tmp_path: Path) -> None:
    tier = TierConfig(tier_id="low", allowed_tools=("read",))
    for task_id in ("a", "b"):  # the second one from the cache
        data = json.loads(encode_spec(spec(tmp_path, task_id=task_id, tier=tier)))
        assert data["policy"] == QUICK.to_dict()
        assert data["tier"] == {**dataclasses.asdict(tier), "allowed_tools": ["read"]}


def test_another_policy_object_is_encoded_from_itself(tmp_path: Path) -> None:
    encode_spec(spec(tmp_path))
    other = dataclasses.replace(QUICK, max_attempts=9)
    data = json.loads(encode_spec(spec(tmp_path, policy=other)))
    assert data["policy"]["max_attempts"] == 9


def test_the_cache_keeps_a_bounded_number_of_objects(tmp_path: Path) -> None:
    policies = [
        RetryPolicy.from_dict({**QUICK.to_dict(), "max_attempts": n}) for n in range(1, 300)
    ]
    for policy in policies:
        data = json.loads(encode_spec(spec(tmp_path, policy=policy)))
        assert data["policy"]["max_attempts"] == policy.max_attempts
    assert len(_spec_codec._POLICY_DATA) <= _spec_codec._DATA_KEPT
