"""What ``import backstay`` and ``from backstay import retry`` load: the retry drivers and
classification, never the engine, the stores, the adapters, the runtime, the exporters, the
command line or a provider's SDK (each run in a fresh interpreter)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

ROOMS = (
    "backstay.engine",
    "backstay.store",
    "backstay.adapters",
    "backstay.runtime",
    "backstay.observe",
    "backstay.cli",
    "backstay.config",
    "backstay.gateway",
    "backstay.fakeprovider",
    "backstay.idempotency",
)
SDKS = ("anthropic", "openai", "google", "redis", "ray", "aiohttp", "opentelemetry", "httpx")


def _loaded_after(statement: str) -> list[str]:
    script = f"import json, sys\n{statement}\nprint(json.dumps(sorted(sys.modules)))\n"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    loaded: list[str] = json.loads(done.stdout)
    return loaded


@pytest.mark.parametrize("statement", ["import backstay", "from backstay import retry"])
def test_the_library_loads_no_room_above_the_retry_drivers(statement: str) -> None:
    loaded = _loaded_after(statement)
    assert [name for name in loaded if name.startswith(ROOMS)] == []
    assert [name for name in loaded if name.split(".")[0] in SDKS] == []
    assert "backstay.call" in loaded


def test_a_lazy_name_loads_its_room_on_first_use() -> None:
    loaded = _loaded_after("from backstay import Engine")
    assert "backstay.engine" in loaded
