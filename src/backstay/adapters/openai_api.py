"""The OpenAI API adapter moved to ``backstay.adapters.api.openai``.

This path is kept for one release; import from the new one.
"""

from __future__ import annotations

import importlib
from typing import Any

_MOVED_TO = "backstay.adapters.api.openai"


def __getattr__(name: str) -> Any:
    return getattr(importlib.import_module(_MOVED_TO), name)
