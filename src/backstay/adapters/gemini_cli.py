"""The Gemini CLI adapter moved to ``backstay.adapters.cli.gemini_cli``.

This path is kept for one release; import from the new one.
"""

from __future__ import annotations

import importlib
from typing import Any

_MOVED_TO = "backstay.adapters.cli.gemini_cli"


def __getattr__(name: str) -> Any:
    return getattr(importlib.import_module(_MOVED_TO), name)
