"""The JSON Schema of ``backstay.yaml``, rendered from the tables in ``_spec``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from backstay.config._fields import Field, json_schema
from backstay.config._frameworks import (
    ENABLED_FIELD,
    FRAMEWORK_HITL_FIELDS,
    FRAMEWORK_LIMIT_FIELDS,
    FRAMEWORK_NAME_PATTERN,
    FRAMEWORK_SAFETY_FIELDS,
    FRAMEWORK_SECTION,
)
from backstay.config._spec import (
    BUDGET_FIELDS,
    CATEGORY_NAMES,
    CIRCUIT_BREAKER_FIELDS,
    KIND_NAMES,
    KIND_OVERRIDE_FIELDS,
    OBSERVE_FIELDS,
    OBSERVE_SECTION,
    OPERATION_TYPES,
    OTEL_FIELDS,
    PER_CATEGORY_HELP,
    PER_KIND_HELP,
    POLICY_FIELDS,
    POLICY_NAME_PATTERN,
    RATE_LIMIT_FIELDS,
    RATE_LIMIT_KEY_PATTERN,
    RETRY_SECTION,
    TOP_LEVEL,
)

SCHEMA_DIALECT: Final = "https://json-schema.org/draft/2020-12/schema"
# A section left empty in YAML (``retry:``) is null, and means "all defaults".
_OBJECT_OR_NULL: Final = ["object", "null"]


def _object(fields: Mapping[str, Field], description: str) -> dict[str, Any]:
    return {
        "description": description,
        "type": _OBJECT_OR_NULL,
        "additionalProperties": False,
        "properties": {key: json_schema(field) for key, field in fields.items()},
    }


def policy_schema() -> dict[str, Any]:
    """One retry policy (``$defs/policy``; its ``per_kind`` refers to ``$defs/kind_override``)."""
    schema = _object(POLICY_FIELDS, "One retry policy.")
    schema["properties"]["per_kind"] = {
        "description": PER_KIND_HELP,
        "type": _OBJECT_OR_NULL,
        "propertyNames": {"enum": list(KIND_NAMES)},
        "additionalProperties": {"$ref": "#/$defs/kind_override"},
    }
    schema["properties"]["per_category"] = {
        "description": PER_CATEGORY_HELP,
        "type": _OBJECT_OR_NULL,
        "propertyNames": {"enum": list(CATEGORY_NAMES)},
        "additionalProperties": {"$ref": "#/$defs/kind_override"},
    }
    return schema


def _retry() -> dict[str, Any]:
    rate_limit = _object(RATE_LIMIT_FIELDS, "Limits of one provider or provider/model.")
    rate_limit["type"] = "object"
    rate_limit["minProperties"] = 1
    properties: dict[str, Any] = {
        "default_policy": {"description": RETRY_SECTION["default_policy"], "type": "string"},
        "policies": {
            "description": RETRY_SECTION["policies"],
            "type": _OBJECT_OR_NULL,
            "propertyNames": {"pattern": POLICY_NAME_PATTERN},
            "additionalProperties": {"$ref": "#/$defs/policy"},
        },
        "operation_policies": {
            "description": RETRY_SECTION["operation_policies"],
            "type": _OBJECT_OR_NULL,
            "propertyNames": {"enum": list(OPERATION_TYPES)},
            "additionalProperties": {"type": "string"},
        },
        "circuit_breaker": _object(CIRCUIT_BREAKER_FIELDS, RETRY_SECTION["circuit_breaker"]),
        "budget": _object(BUDGET_FIELDS, RETRY_SECTION["budget"]),
        "rate_limits": {
            "description": RETRY_SECTION["rate_limits"],
            "type": _OBJECT_OR_NULL,
            "propertyNames": {"pattern": RATE_LIMIT_KEY_PATTERN},
            "additionalProperties": rate_limit,
        },
    }
    return {
        "description": TOP_LEVEL["retry"],
        "type": _OBJECT_OR_NULL,
        "additionalProperties": False,
        "properties": properties,
    }


def _frameworks() -> dict[str, Any]:
    framework = {
        "description": "One agent framework.",
        "type": _OBJECT_OR_NULL,
        "additionalProperties": False,
        "properties": {
            "enabled": json_schema(ENABLED_FIELD),
            "limits": _object(FRAMEWORK_LIMIT_FIELDS, FRAMEWORK_SECTION["limits"]),
            "safety": _object(FRAMEWORK_SAFETY_FIELDS, FRAMEWORK_SECTION["safety"]),
            "human_in_the_loop": _object(
                FRAMEWORK_HITL_FIELDS, FRAMEWORK_SECTION["human_in_the_loop"]
            ),
        },
    }
    return {
        "description": TOP_LEVEL["frameworks"],
        "type": _OBJECT_OR_NULL,
        "propertyNames": {"pattern": FRAMEWORK_NAME_PATTERN},
        "additionalProperties": framework,
    }


def _observe() -> dict[str, Any]:
    return {
        "description": TOP_LEVEL["observe"],
        "type": _OBJECT_OR_NULL,
        "additionalProperties": False,
        "properties": {
            "otel": _object(OTEL_FIELDS, OBSERVE_SECTION["otel"]),
            **{key: json_schema(field) for key, field in OBSERVE_FIELDS.items()},
        },
    }


def _store() -> dict[str, Any]:
    return {
        "description": TOP_LEVEL["store"],
        "oneOf": [
            {"type": "string", "minLength": 1},
            {
                "type": "object",
                "additionalProperties": False,
                "required": ["url"],
                "properties": {
                    "url": {"type": "string", "minLength": 1},
                    "unavailable": {"enum": ["stop", "wait"]},
                },
            },
        ],
    }


def kind_override_schema() -> dict[str, Any]:
    """The settings for one failure kind (``$defs/kind_override``)."""
    return _object(KIND_OVERRIDE_FIELDS, "Settings for one failure kind.")


def config_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the configuration file."""
    return {
        "$schema": SCHEMA_DIALECT,
        "title": "backstay configuration (backstay.yaml)",
        "type": _OBJECT_OR_NULL,
        "additionalProperties": False,
        "properties": {
            "retry": _retry(),
            "frameworks": _frameworks(),
            "observe": _observe(),
            "store": _store(),
        },
        "$defs": {"policy": policy_schema(), "kind_override": kind_override_schema()},
    }
