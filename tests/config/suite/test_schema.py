"""The JSON Schema of suite files says what load_suite accepts: the same keys and limits.

After changing a key: ``.venv/bin/backstay suite schema > docs/suite.schema.json``.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from backstay.adapters.contract import TierConfig
from backstay.config import config_schema, suite_schema
from backstay.config.suite.spec import (
    ADAPTER_OPTION_FIELDS,
    FALLBACK_FIELDS,
    RUN_FIELDS,
    SECRET_KEY_PATTERN,
    STRUCTURED_RUN_KEYS,
    TASK_FIELDS,
    TIER_FIELDS,
    TOP_LEVEL,
)

ROOT = Path(__file__).resolve().parents[3]
SCHEMA = suite_schema()
DEFS = SCHEMA["$defs"]


def test_the_published_schema_is_the_functions_output() -> None:
    published = (ROOT / "docs" / "suite.schema.json").read_text(encoding="utf-8")
    assert published == json.dumps(SCHEMA, indent=2) + "\n"


def test_the_schema_is_draft_2020_12_closed_and_requires_a_name_and_tasks() -> None:
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert SCHEMA["additionalProperties"] is False
    assert SCHEMA["required"] == ["suite", "tasks"]
    assert list(SCHEMA["properties"]) == list(TOP_LEVEL)


def test_defaults_take_the_run_settings() -> None:
    defaults = SCHEMA["properties"]["defaults"]
    assert defaults["additionalProperties"] is False
    assert list(defaults["properties"]) == [*RUN_FIELDS, *STRUCTURED_RUN_KEYS]


def test_a_task_takes_its_own_keys_and_the_run_settings() -> None:
    assert DEFS["task"]["additionalProperties"] is False
    assert list(DEFS["task"]["properties"]) == [
        *TASK_FIELDS,
        "limits",
        *RUN_FIELDS,
        *STRUCTURED_RUN_KEYS,
    ]


def test_a_fallback_has_the_keys_the_loader_checks() -> None:
    assert list(DEFS["fallback"]["properties"]) == list(FALLBACK_FIELDS)
    assert DEFS["fallback"]["required"] == ["adapter", "model"]
    assert DEFS["fallback"]["additionalProperties"] is False


def test_a_task_needs_an_id_and_exactly_one_prompt() -> None:
    assert DEFS["task"]["required"] == ["id"]
    assert DEFS["task"]["oneOf"] == [{"required": ["prompt"]}, {"required": ["prompt_file"]}]


def test_a_tier_has_a_key_for_every_tier_config_field() -> None:
    fields = {f.name for f in dataclasses.fields(TierConfig)}
    keys = {"system_prompt" if k == "tier_prompt" else k for k in DEFS["tier"]["properties"]}
    assert keys == fields
    assert list(TIER_FIELDS) == list(DEFS["tier"]["properties"])


def test_an_inline_policy_is_a_policy_of_backstay_yaml() -> None:
    config = config_schema()["$defs"]
    assert (DEFS["policy"], DEFS["kind_override"]) == (config["policy"], config["kind_override"])
    one_of = DEFS["task"]["properties"]["policy"]["oneOf"]
    assert one_of[1] == {"$ref": "#/$defs/policy", "type": "object"}


def test_runs_are_limited_as_the_loader_limits_them() -> None:
    runs = DEFS["task"]["properties"]["runs"]
    assert (runs["type"], runs["minimum"], runs["maximum"]) == ("integer", 1, 1000)


def test_adapter_options_name_backstays_own_keys() -> None:
    options = DEFS["adapter_options"]
    assert list(options["properties"]) == list(ADAPTER_OPTION_FIELDS)
    assert options["propertyNames"] == {"not": {"pattern": SECRET_KEY_PATTERN}}


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        ("api_key", True),
        ("openai_api_key", True),
        ("token", True),
        ("client_secret", True),
        ("password", True),
        ("api_key_env", False),
        ("base_url", False),
        ("max_tokens", False),
        ("scenario", False),
    ],
)
def test_the_secret_key_pattern_refuses_keys_that_hold_secrets(key: str, secret: bool) -> None:
    assert bool(re.search(SECRET_KEY_PATTERN, key)) is secret
