"""Task specs in the state file: a lossless round trip, without secret values."""

from __future__ import annotations

import json
from pathlib import Path
from types import MappingProxyType

import pytest
from tests.engine.support import QUICK, spec

from backstay.adapters.contract import TierConfig
from backstay.engine._spec_codec import decode_spec, encode_spec, missing_secret
from backstay.errors import ConfigError


def test_a_spec_reads_back_equal(tmp_path: Path) -> None:
    task = spec(
        tmp_path,
        tier=TierConfig(tier_id="T0", system_prompt="be brief", allowed_tools=("Read",)),
        config={"scenario": {"attempts": [[{"result": "ok"}]]}},
        env={"LANG": "C"},
        stall_timeout_s=5.0,
    )
    assert decode_spec(encode_spec(task), secrets={}) == (task, ())


def test_a_specs_limits_read_back_and_none_are_not_written(tmp_path: Path) -> None:
    limited = spec(tmp_path, limits={"max_output_tokens": 40})
    assert decode_spec(encode_spec(limited), secrets={}) == (limited, ())
    assert "limits" not in json.loads(encode_spec(spec(tmp_path)))


def test_a_policy_name_reads_back_as_the_name(tmp_path: Path) -> None:
    task = spec(tmp_path, policy="agent_dispatch")
    assert decode_spec(encode_spec(task), secrets={})[0].policy == "agent_dispatch"


def test_a_policy_object_reads_back_equal(tmp_path: Path) -> None:
    assert decode_spec(encode_spec(spec(tmp_path)), secrets={})[0].policy == QUICK


def test_secret_variables_are_stored_by_name_only(tmp_path: Path) -> None:
    text = encode_spec(spec(tmp_path, env={"ANTHROPIC_API_KEY": "sk-secret-value", "LANG": "C"}))
    assert "sk-secret-value" not in text
    assert json.loads(text)["secret_env"] == ["ANTHROPIC_API_KEY"]


def test_secret_variables_are_filled_from_the_callers_environment(tmp_path: Path) -> None:
    text = encode_spec(spec(tmp_path, env={"GH_TOKEN": "t0k"}))
    task, missing = decode_spec(text, secrets={"GH_TOKEN": "new"})
    assert (dict(task.env), missing) == ({"GH_TOKEN": "new"}, ())


def test_missing_secret_variables_are_named(tmp_path: Path) -> None:
    text = encode_spec(spec(tmp_path, env={"GH_TOKEN": "t0k"}))
    assert decode_spec(text, secrets={})[1] == ("GH_TOKEN",)


def test_the_missing_secret_error_names_the_variable_and_the_task() -> None:
    error = missing_secret("t1", ("GH_TOKEN",))
    assert error.where == "env.GH_TOKEN"
    assert "'t1'" in str(error)


def test_a_config_that_is_not_json_data_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="JSON"):
        encode_spec(spec(tmp_path, config={"path": Path("x")}))


def test_a_value_that_looks_like_a_credential_is_stored_by_name_only(tmp_path: Path) -> None:
    value = "sk-ant-api03-Canary0123456789abcdefABCDEF"
    text = encode_spec(spec(tmp_path, env={"PROVIDER_SETTING": value}))
    assert value not in text


def test_read_only_config_is_stored_as_json_data(tmp_path: Path) -> None:
    config = MappingProxyType({"scenario": MappingProxyType({"attempts": ((),)})})
    task, _ = decode_spec(encode_spec(spec(tmp_path, config=config)), secrets={})
    assert task.config == {"scenario": {"attempts": [[]]}}


def test_whether_a_spec_inherits_reads_back(tmp_path: Path) -> None:
    for inherit in (True, False):
        task = spec(tmp_path, inherit_env=inherit)
        assert decode_spec(encode_spec(task), secrets={})[0].inherit_env is inherit


def test_a_spec_written_before_inheritance_existed_inherits_nothing(tmp_path: Path) -> None:
    data = json.loads(encode_spec(spec(tmp_path)))
    del data["inherit_env"]
    assert decode_spec(json.dumps(data), secrets={})[0].inherit_env is False
