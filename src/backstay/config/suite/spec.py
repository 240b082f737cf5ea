"""The keys of a suite file: every section, every setting, its type, limits and default.

As with ``_spec`` for ``backstay.yaml``, these tables are the single description of the
format: the suite loader checks input against them, ``suite_schema()`` renders them as
JSON Schema, and docs/suite.md lists them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from backstay.config._fields import Field

# Suite names, task ids and tier ids end up in workflow, operation and run ids (joined with
# ":" and "-") and in directory names: no separators, no spaces.
ID_PATTERN: Final = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"
ID_HINT: Final = "a letter or digit, then letters, digits, '_', '.' or '-'"
# Adapter names as the registry knows them ("mock", "claude-code", "anthropic-api").
ADAPTER_PATTERN: Final = r"^[a-z0-9][a-z0-9_.-]*$"
ENV_NAME_PATTERN: Final = r"^[A-Za-z_][A-Za-z0-9_]*$"
ENV_NAME_HINT: Final = "the name of an environment variable (letters, digits and '_')"
# Option keys that would hold a secret itself: refused, secrets come from the environment.
SECRET_KEY_PATTERN: Final = (
    r"^(.*[_-])?(api_?key|apikey|key|token|secret|password|passwd|credentials?)$"  # noqa: S105
)

DEFAULT_TIMEOUT_S: Final = 600.0
DEFAULT_RUNS: Final = 1
MAX_RUNS: Final = 1000
DEFAULT_TIER_ID: Final = "T0"

TOP_LEVEL: Final[Mapping[str, str]] = {
    "suite": "The suite's name; a workflow id is this name and a run id.",
    "description": "What the suite is for (free text).",
    "defaults": "Settings every task starts from.",
    "adapters": "Per adapter: its own settings and the environment variables it is given.",
    "tasks": "The tasks, in order; each runs once per tier and run.",
    "budget": "The batch's spending budget: what all its attempts together may spend "
    "(docs/budgets.md).",
    "tenants": "Per tenant (a name tasks give as `tenant`): its spending budget, over all the "
    "tasks of the state directory that name it.",
    "storage": "What the batch's state keeps of its tasks at rest: `prompts: redacted` "
    "(default) or `clear` (docs/design/storage.md).",
    "gateway": "Whether the agent CLIs of the batch go through a backstay gateway started for "
    "it, each attempt with a run token of its own as its key (default true; false is "
    "batch --no-gateway; docs/gateway.md, Agent runs).",
}

SUITE_NAME_FIELD: Final = Field(
    type="string", pattern=ID_PATTERN, pattern_hint=ID_HINT, help=TOP_LEVEL["suite"]
)
DESCRIPTION_FIELD: Final = Field(type="string", help=TOP_LEVEL["description"])

POLICY_HELP: Final = (
    "The retry policy of each run: a policy name (built in or from backstay.yaml), or a "
    "mapping of policy settings, optionally with `extends`."
)
TIERS_HELP: Final = "The tiers each run is repeated for (default: one tier, T0)."
BUDGET_HELP: Final = (
    "The spending budget of each run of the task: `usd` and/or `tokens` (default: none)."
)
FALLBACKS_HELP: Final = (
    "The candidates a run moves to, in order, when a failure calls for it (docs/fallback.md): "
    "each an adapter, a model, and optionally its credential variable and capabilities."
)

# Keys a task may give and `defaults` may give for every task. `policy` and `tiers` are
# structured, and checked on their own.
RUN_FIELDS: Final[Mapping[str, Field]] = {
    "adapter": Field(
        type="string",
        pattern=ADAPTER_PATTERN,
        pattern_hint="an adapter name such as mock or claude-code",
        help="The adapter that runs the task (an adapter registry name).",
    ),
    "model": Field(
        type="string",
        pattern=r"^\S+$",
        pattern_hint="a model name without spaces",
        help="The model the agent uses.",
    ),
    "timeout_s": Field(
        type="number",
        minimum=0,
        exclusive_minimum=True,
        help="Time allowed for one attempt of a run (s); past it the agent is killed.",
    ),
    "stall_timeout_s": Field(
        type="number",
        minimum=0,
        exclusive_minimum=True,
        nullable=True,
        help="Kill an attempt that prints nothing for this long (s); null: no limit.",
    ),
    "runs": Field(
        type="integer",
        minimum=1,
        maximum=MAX_RUNS,
        help="How many times each tier of the task runs.",
    ),
    "tenant": Field(
        type="string",
        pattern=ID_PATTERN,
        pattern_hint=ID_HINT,
        help="Whose work the task is: the tenant's budget (under `tenants`) covers it.",
    ),
    "context_window": Field(
        type="integer",
        minimum=1,
        nullable=True,
        help="The model's context window (tokens), so that a context overflow can fall back "
        "to a larger one; null: unknown.",
    ),
}
STRUCTURED_RUN_KEYS: Final[Mapping[str, str]] = {
    "policy": POLICY_HELP,
    "tiers": TIERS_HELP,
    "budget": BUDGET_HELP,
    "fallbacks": FALLBACKS_HELP,
}

RUN_DEFAULTS: Final[Mapping[str, str]] = {
    "adapter": "-",
    "model": "-",
    "timeout_s": f"{DEFAULT_TIMEOUT_S:g}",
    "stall_timeout_s": "null",
    "runs": f"{DEFAULT_RUNS}",
    "policy": "the policy for `agent` operations (agent_dispatch)",
    "tiers": f"one tier, {DEFAULT_TIER_ID}",
    "tenant": "none",
    "budget": "none",
    "context_window": "null",
    "fallbacks": "none",
}

# The keys of one entry of `fallbacks`.
FALLBACK_FIELDS: Final[Mapping[str, Field]] = {
    "adapter": Field(
        type="string",
        pattern=ADAPTER_PATTERN,
        pattern_hint="an adapter name such as openai-api",
        help="The adapter that runs an attempt on this candidate (required).",
    ),
    "model": Field(
        type="string",
        pattern=r"^\S+$",
        pattern_hint="a model name without spaces",
        help="The model (required).",
    ),
    "api_key_env": Field(
        type="string",
        pattern=ENV_NAME_PATTERN,
        pattern_hint=ENV_NAME_HINT,
        sensitive=True,
        help="The environment variable holding this candidate's key (default: the "
        "adapter's usual one). Never the key itself.",
    ),
    "context_window": Field(
        type="integer", minimum=1, help="Its context window in tokens (default: unknown)."
    ),
    "tools": Field(type="boolean", help="Whether it can use tools (default: true)."),
    "streaming": Field(type="boolean", help="Whether it can stream (default: true)."),
    "base_url": Field(
        type="string",
        pattern=r"^\S+$",
        pattern_hint="a URL",
        help="The API's base URL for this candidate (default: the adapter's).",
    ),
}

# A spending budget: the batch's (top level), a tenant's, or each run's (defaults, task).
BUDGET_FIELDS: Final[Mapping[str, Field]] = {
    "usd": Field(
        type="number",
        minimum=0,
        help="At most this many US dollars (the attempts' reported or priced cost).",
    ),
    "tokens": Field(
        type="integer", minimum=0, help="At most this many tokens (prompt and output)."
    ),
}
TENANT_KEYS: Final[Mapping[str, str]] = {"budget": "The tenant's spending budget."}

TASK_FIELDS: Final[Mapping[str, Field]] = {
    "id": Field(
        type="string",
        pattern=ID_PATTERN,
        pattern_hint=ID_HINT,
        help="The task's id, unique in the suite (required).",
    ),
    "description": Field(type="string", help="What the task is (free text)."),
    "prompt": Field(type="string", help="The prompt text. Give this or `prompt_file`."),
    "prompt_file": Field(
        type="string",
        help="A file holding the prompt, relative to the suite file's folder. Give this or "
        "`prompt`.",
    ),
    "workspace": Field(
        type="string",
        help="A folder, relative to the suite file's folder, copied as each run's workspace "
        "(default: an empty workspace).",
    ),
}

TIER_FIELDS: Final[Mapping[str, Field]] = {
    "tier_id": Field(
        type="string",
        pattern=ID_PATTERN,
        pattern_hint=ID_HINT,
        help="The tier's id, unique in the task (required); run ids start with it.",
    ),
    "tier_name": Field(type="string", help="A readable name (default: empty)."),
    "tier_prompt": Field(
        type="string", help="A system prompt added for this tier (default: none)."
    ),
    "tools_enabled": Field(type="boolean", help="Whether the agent may use tools (default: true)."),
    "delegation_enabled": Field(
        type="boolean", help="Whether the agent may delegate to sub-agents (default: false)."
    ),
    "allowed_tools": Field(
        type="strings",
        pattern=r"^\S+$",
        pattern_hint="a tool name without spaces",
        help="Only these tools (default: every tool the agent has); needs tools_enabled.",
    ),
}

ADAPTER_OPTION_FIELDS: Final[Mapping[str, Field]] = {
    "api_key_env": Field(
        type="string",
        pattern=ENV_NAME_PATTERN,
        pattern_hint=ENV_NAME_HINT,
        sensitive=True,
        help="The environment variable holding the API key; the agent gets it under the "
        "same name. Never the key itself.",
    ),
    "pass_env": Field(
        type="strings",
        pattern=ENV_NAME_PATTERN,
        pattern_hint=ENV_NAME_HINT,
        sensitive=True,
        help="Environment variables passed on to the agent as they are (unset ones are "
        "left out), besides the standard variables of the adapter's provider.",
    ),
    "inherit_env": Field(
        type="boolean",
        help="Whether the agent takes the standard variables of its provider (such as "
        "ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL) from the environment backstay runs in "
        "(default: true); false: only api_key_env and pass_env.",
    ),
}
ADAPTER_OPTIONS_HELP: Final = (
    "Every other key is the adapter's own setting, checked by the adapter (for `mock`: "
    "`scenario`, `scenarios` by task id, `state_dir`)."
)
