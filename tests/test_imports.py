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


# Each package loads a name's module on first use, not every module up front.
LAZY_PACKAGES = {
    "from backstay.engine import TaskState": ("backstay.engine.runner", "backstay.engine.task"),
    "from backstay.engine.suite_batch import read_identity": (
        "backstay.engine.runner",
        "backstay.adapters.base",
        "backstay.config._model",
    ),
    "from backstay.adapters.contract import AgentRequest": ("backstay.adapters.base",),
    "from backstay.fallback.candidate import Candidate": ("backstay.fallback.chain",),
    "from backstay.breaker.events import CircuitOpened": ("backstay.breaker.breaker",),
    "from backstay.executors.events import WorkerLost": ("backstay.executors.ray_executor",),
    "from backstay.idempotency.ids import operation_id": ("backstay.idempotency.guard",),
    "from backstay.config.suite.spec import DEFAULT_TIMEOUT_S": ("backstay.config._model",),
    # What health reads of a SQLite file needs none of its stores (nor the engine's records
    # and spec codec they load), and health --json's short path no typer.
    "from backstay.store.sqlite.health_reads import read_health_facts": (
        "backstay.store.sqlite.tasks",
        "backstay.store.sqlite.operations",
        "backstay.engine.records",
        "backstay.engine._spec_codec",
    ),
    "from backstay.cli._health_probe import answer": ("typer", "rich"),
    "from backstay.cli._health_report import report_at": (
        "typer",
        "rich",
        "backstay.store.sqlite.tasks",
    ),
    # What health reads of Redis needs no redis-py (nor its asyncio client, nor the
    # OpenTelemetry metrics SDK it loads).
    "from backstay.store.redis.health_reads import read_health_facts": (
        "redis",
        "redis.asyncio",
        "opentelemetry.sdk.metrics",
        "backstay.store.redis._client",
        "backstay.store.redis.tasks",
    ),
}


@pytest.mark.parametrize("statement", list(LAZY_PACKAGES))
def test_a_packages_module_loads_without_the_rest_of_the_package(statement: str) -> None:
    loaded = _loaded_after(statement)
    assert [name for name in LAZY_PACKAGES[statement] if name in loaded] == []


@pytest.mark.parametrize(
    "package",
    [
        "engine",
        "adapters",
        "fallback",
        "breaker",
        "executors",
        "idempotency",
        "config",
        "store.redis",
    ],
)
def test_every_name_of_a_lazy_package_resolves(package: str) -> None:
    script = (
        f"import backstay.{package} as p\n"
        "missing = [n for n in p.__all__ if getattr(p, n, None) is None]\n"
        "assert not missing, missing\n"
        "assert set(p.__all__) <= set(dir(p))\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)


def test_the_engines_suite_diff_stays_the_function_once_its_module_is_imported() -> None:
    # The package's name suite_diff is the function; importing the module of that name
    # (which sets the package's attribute to it) leaves it so.
    script = (
        "import backstay.engine.suite_diff\n"
        "from backstay.engine import suite_diff\n"
        "assert callable(suite_diff) and suite_diff.__name__ == 'suite_diff', suite_diff\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
