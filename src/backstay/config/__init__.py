"""The only place where user input — the YAML files, ``BACKSTAY__*`` environment variables,
``--set`` and other command-line flags — becomes frozen objects.

``load_config()`` reads ``backstay.yaml`` (or the file given, or the one
``BACKSTAY_CONFIG`` names), applies environment overrides, then ``--set`` overrides, and
checks everything once, listing every problem with its file, line and key path. The
result, a ``BackstayConfig``, never changes: there is no reload. The file's keys are
documented in docs/config.md; ``config_schema()`` is its JSON Schema.

``load_suite()`` reads a suite of agent tasks into a ``Suite`` the same way (docs/suite.md;
``suite_schema()``); ``Suite.expand()`` lists its runs. ``harness_run()`` checks the flags
of one agent run (``backstay run``). ``with_frameworks()`` applies the configuration's
``frameworks`` sections to a suite's framework adapters, ``with_framework()`` to the
options of one adapter (``backstay run``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from backstay._lazy_names import listed_names, load_name

if TYPE_CHECKING:
    from backstay.config._configure import configure
    from backstay.config._frameworks import FrameworkConfig, with_framework, with_frameworks
    from backstay.config._load import CONFIG_ENV_VAR, DEFAULT_CONFIG_FILE, load_config
    from backstay.config._model import BackstayConfig, EffectiveValue
    from backstay.config._overrides import ENV_PREFIX
    from backstay.config._schema import config_schema
    from backstay.config._source import Source, SourceKind
    from backstay.config.run.harness import HarnessRun, harness_run
    from backstay.config.suite.load import load_suite
    from backstay.config.suite.model import (
        AdapterOptions,
        Suite,
        SuiteDefaults,
        SuiteRun,
        SuiteTask,
        task_run_id,
        workflow_id,
    )
    from backstay.config.suite.schema import suite_schema
    from backstay.config.suite.spec import DEFAULT_TIMEOUT_S


__all__ = [
    "CONFIG_ENV_VAR",
    "DEFAULT_CONFIG_FILE",
    "DEFAULT_TIMEOUT_S",
    "ENV_PREFIX",
    "AdapterOptions",
    "BackstayConfig",
    "EffectiveValue",
    "FrameworkConfig",
    "HarnessRun",
    "Source",
    "SourceKind",
    "Suite",
    "SuiteDefaults",
    "SuiteRun",
    "SuiteTask",
    "config_schema",
    "configure",
    "harness_run",
    "load_config",
    "load_suite",
    "suite_schema",
    "task_run_id",
    "with_framework",
    "with_frameworks",
    "workflow_id",
]

# Where each name lives, imported on first use: importing a module of this package
# (``suite.spec``, ``_otel`` …) loads only what that module needs.
_LAZY: Final = {
    "AdapterOptions": "backstay.config.suite.model",
    "BackstayConfig": "backstay.config._model",
    "CONFIG_ENV_VAR": "backstay.config._load",
    "DEFAULT_CONFIG_FILE": "backstay.config._load",
    "DEFAULT_TIMEOUT_S": "backstay.config.suite.spec",
    "ENV_PREFIX": "backstay.config._overrides",
    "EffectiveValue": "backstay.config._model",
    "FrameworkConfig": "backstay.config._frameworks",
    "HarnessRun": "backstay.config.run.harness",
    "Source": "backstay.config._source",
    "SourceKind": "backstay.config._source",
    "Suite": "backstay.config.suite.model",
    "SuiteDefaults": "backstay.config.suite.model",
    "SuiteRun": "backstay.config.suite.model",
    "SuiteTask": "backstay.config.suite.model",
    "config_schema": "backstay.config._schema",
    "configure": "backstay.config._configure",
    "harness_run": "backstay.config.run.harness",
    "load_config": "backstay.config._load",
    "load_suite": "backstay.config.suite.load",
    "suite_schema": "backstay.config.suite.schema",
    "task_run_id": "backstay.config.suite.model",
    "with_framework": "backstay.config._frameworks",
    "with_frameworks": "backstay.config._frameworks",
    "workflow_id": "backstay.config.suite.model",
}


def __getattr__(name: str) -> Any:
    return load_name(globals(), name, _LAZY)


def __dir__() -> list[str]:
    return listed_names(globals())
