"""What ``import backstay`` and ``from backstay import retry`` load: the retry drivers and
classification, never the engine, the stores, the adapters, the runtime, the exporters, the
command line or a provider's SDK (each run in a fresh interpreter); nor spending budgets,
rate limiters or retry budgets (``backstay.policy`` loads each name on first use), nor what
only a rare input needs (an HTTP date, a named time zone)."""

from __future__ import annotations

import importlib
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
# Loaded on first use, not by ``import backstay``.
ON_FIRST_USE = (
    "backstay.policy.spend",
    "backstay.policy.ratelimit",
    "backstay.policy.limiters",
    "backstay.policy.budget",
    "asyncio",
    "email.utils",
    "zoneinfo",
    "hashlib",
)


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
    assert [name for name in ON_FIRST_USE if name in loaded] == []
    assert "backstay.call" in loaded


def test_a_lazy_name_loads_its_room_on_first_use() -> None:
    loaded = _loaded_after("from backstay import Engine")
    assert "backstay.engine" in loaded


@pytest.mark.parametrize("package", ["backstay", "backstay.policy"])
def test_every_public_name_resolves(package: str) -> None:
    names = ", ".join(repr(name) for name in importlib.import_module(package).__all__)
    script = (
        f"import importlib\nm = importlib.import_module({package!r})\n"
        f"missing = [n for n in ({names},) if getattr(m, n, None) is None]\n"
        "assert not missing, missing\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)


def test_a_lazy_policy_name_loads_only_its_module() -> None:
    loaded = _loaded_after("from backstay.policy import RetryPolicy")
    assert "backstay.policy.retry" in loaded
    assert "backstay.policy.spend" not in loaded
    assert "backstay.policy.ratelimit" not in loaded
