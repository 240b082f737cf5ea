"""The JSON Schema of a suite file, rendered from the tables in ``suite.spec`` (and, for
inline policies, from those of ``backstay.yaml``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from backstay.config._fields import Field, json_schema
from backstay.config._schema import SCHEMA_DIALECT, kind_override_schema, policy_schema
from backstay.config._spec import POLICY_NAME_PATTERN
from backstay.config.suite.limits import LIMITS_HELP, TASK_LIMIT_FIELDS
from backstay.config.suite.spec import (
    ADAPTER_OPTION_FIELDS,
    ADAPTER_OPTIONS_HELP,
    ADAPTER_PATTERN,
    BUDGET_FIELDS,
    BUDGET_HELP,
    DEFAULT_TIER_ID,
    DESCRIPTION_FIELD,
    FALLBACK_FIELDS,
    FALLBACKS_HELP,
    ID_PATTERN,
    POLICY_HELP,
    RUN_FIELDS,
    SECRET_KEY_PATTERN,
    SUITE_NAME_FIELD,
    TASK_FIELDS,
    TENANT_KEYS,
    TIER_FIELDS,
    TIERS_HELP,
    TOP_LEVEL,
)
from backstay.config.suite.storage import STORAGE_FIELDS


def _properties(fields: Mapping[str, Field]) -> dict[str, Any]:
    return {key: json_schema(field) for key, field in fields.items()}


def _run_properties() -> dict[str, Any]:
    out = _properties(RUN_FIELDS)
    out["policy"] = {
        "description": POLICY_HELP,
        "oneOf": [
            {"type": "string", "pattern": POLICY_NAME_PATTERN},
            {"$ref": "#/$defs/policy", "type": "object"},
        ],
    }
    out["tiers"] = {
        "description": TIERS_HELP,
        "type": "array",
        "minItems": 1,
        "items": {"$ref": "#/$defs/tier"},
    }
    out["budget"] = {"description": BUDGET_HELP, "$ref": "#/$defs/budget"}
    out["fallbacks"] = {
        "description": FALLBACKS_HELP,
        "type": "array",
        "items": {"$ref": "#/$defs/fallback"},
    }
    return out


def _budget() -> dict[str, Any]:
    return {
        "description": "A spending budget: usd and/or tokens (docs/budgets.md).",
        "type": "object",
        "additionalProperties": False,
        "minProperties": 1,
        "properties": _properties(BUDGET_FIELDS),
    }


def _tenants() -> dict[str, Any]:
    return {
        "description": TOP_LEVEL["tenants"],
        "type": ["object", "null"],
        "propertyNames": {"pattern": ID_PATTERN},
        "additionalProperties": {
            "type": "object",
            "additionalProperties": False,
            "required": ["budget"],
            "properties": {
                key: {"description": help_text, "$ref": "#/$defs/budget"}
                for key, help_text in TENANT_KEYS.items()
            },
        },
    }


def _task() -> dict[str, Any]:
    return {
        "description": "One task: its own keys, and any key of defaults to change it.",
        "type": "object",
        "additionalProperties": False,
        "required": ["id"],
        "oneOf": [{"required": ["prompt"]}, {"required": ["prompt_file"]}],
        "properties": {
            **_properties(TASK_FIELDS),
            "limits": {
                "description": LIMITS_HELP,
                "type": ["object", "null"],
                "additionalProperties": False,
                "properties": _properties(TASK_LIMIT_FIELDS),
            },
            **_run_properties(),
        },
    }


def _tier() -> dict[str, Any]:
    return {
        "description": f"One evaluation tier (default: one tier, {DEFAULT_TIER_ID}).",
        "type": "object",
        "additionalProperties": False,
        "required": ["tier_id"],
        "properties": _properties(TIER_FIELDS),
    }


def _adapter_options() -> dict[str, Any]:
    return {
        "description": f"{TOP_LEVEL['adapters']} {ADAPTER_OPTIONS_HELP}",
        "type": ["object", "null"],
        "propertyNames": {"not": {"pattern": SECRET_KEY_PATTERN}},
        "properties": _properties(ADAPTER_OPTION_FIELDS),
    }


def suite_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a suite file."""
    return {
        "$schema": SCHEMA_DIALECT,
        "title": "backstay suite",
        "type": "object",
        "additionalProperties": False,
        "required": ["suite", "tasks"],
        "properties": {
            "suite": json_schema(SUITE_NAME_FIELD),
            "description": json_schema(DESCRIPTION_FIELD),
            "defaults": {
                "description": TOP_LEVEL["defaults"],
                "type": ["object", "null"],
                "additionalProperties": False,
                "properties": _run_properties(),
            },
            "adapters": {
                "description": TOP_LEVEL["adapters"],
                "type": ["object", "null"],
                "propertyNames": {"pattern": ADAPTER_PATTERN},
                "additionalProperties": {"$ref": "#/$defs/adapter_options"},
            },
            "tasks": {
                "description": TOP_LEVEL["tasks"],
                "type": "array",
                "minItems": 1,
                "items": {"$ref": "#/$defs/task"},
            },
            "budget": {"description": TOP_LEVEL["budget"], "$ref": "#/$defs/budget"},
            "tenants": _tenants(),
            "storage": {
                "description": TOP_LEVEL["storage"],
                "type": ["object", "null"],
                "additionalProperties": False,
                "properties": _properties(STORAGE_FIELDS),
            },
            "gateway": {"description": TOP_LEVEL["gateway"], "type": "boolean"},
        },
        "$defs": {
            "task": _task(),
            "tier": _tier(),
            "fallback": {
                "description": "One fallback candidate.",
                "type": "object",
                "additionalProperties": False,
                "required": ["adapter", "model"],
                "properties": _properties(FALLBACK_FIELDS),
            },
            "adapter_options": _adapter_options(),
            "budget": _budget(),
            "policy": policy_schema(),
            "kind_override": kind_override_schema(),
        },
    }
