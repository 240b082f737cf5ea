"""The only place where user input — the YAML file, ``BACKSTAY__*`` environment variables,
``--set`` flags — becomes frozen objects.

``load_config()`` reads ``backstay.yaml`` (or the file given, or the one
``BACKSTAY_CONFIG`` names), applies environment overrides, then ``--set`` overrides, and
checks everything once, listing every problem with its file, line and key path. The
result, a ``BackstayConfig``, never changes: there is no reload. The file's keys are
documented in docs/config.md; ``config_schema()`` is its JSON Schema.
"""

from __future__ import annotations

from backstay.config._configure import configure
from backstay.config._load import CONFIG_ENV_VAR, DEFAULT_CONFIG_FILE, load_config
from backstay.config._model import BackstayConfig, EffectiveValue
from backstay.config._overrides import ENV_PREFIX
from backstay.config._schema import config_schema
from backstay.config._source import Source, SourceKind

__all__ = [
    "CONFIG_ENV_VAR",
    "DEFAULT_CONFIG_FILE",
    "ENV_PREFIX",
    "BackstayConfig",
    "EffectiveValue",
    "Source",
    "SourceKind",
    "config_schema",
    "configure",
    "load_config",
]
