"""Fake providers inside a private network namespace, for the tests that run a real agent
CLI through its adapter: each ``serve`` starts ``backstay fake-provider serve`` with a
scenario on a port of its own inside the namespace, and reads the provider's counters
from inside too (nothing outside can reach it).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final

import pytest

from backstay.agents import CLIS, Located, agents_dir, locate
from backstay.agents.install import current_install
from backstay.testing.netns import NetworkNamespace, unavailable_reason

FIRST_PORT: Final = 8400
BACKSTAY: Final = [sys.executable, "-c", "from backstay.cli import main; main()"]
STATS_SCRIPT: Final = """
import sys, time, urllib.request
for _ in range(400):
    try:
        print(urllib.request.urlopen(sys.argv[1] + "/_backstay/stats", timeout=1).read().decode())
        break
    except OSError:
        time.sleep(0.05)
"""
# Variables every real-CLI run gets: the search path (node for npm launchers) and locale.
BASE_ENV: Final = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}


def installed(name: str) -> Located:
    """The installed CLI ``name``; the test is skipped, with the reason, when it is not."""
    root = agents_dir()
    manifest, reason = current_install(CLIS[name], root)
    if manifest is None:
        pytest.skip(f"{name} is not installed in {root} ({reason}): run `make agents`")
    return locate(name)


class Served:
    """One fake provider running inside the namespace."""

    def __init__(self, namespace: NetworkNamespace, url: str, process: subprocess.Popen[Any]):
        self._namespace = namespace
        self.url = url
        self.process = process

    def stats(self) -> dict[str, Any]:
        """What the provider counted so far (``GET /_backstay/stats``)."""
        done = self._namespace.run(
            [sys.executable, "-I", "-c", STATS_SCRIPT, self.url], timeout_s=30
        )
        assert done.stdout.strip(), f"the fake provider did not answer: {done.stderr}"
        data: dict[str, Any] = json.loads(done.stdout)
        return data


class Providers:
    """Starts fake providers inside ``namespace``, each on the next free port."""

    def __init__(self, namespace: NetworkNamespace, folder: Path) -> None:
        self.namespace = namespace
        self._folder = folder
        self._next = FIRST_PORT
        self._shared: dict[str, Served] = {}

    @property
    def launcher(self) -> list[str]:
        return list(self.namespace.launcher)

    def serve(self, scenario: Mapping[str, Any], *, log: Path | None = None) -> Served:
        """A new provider acting out ``scenario`` (the mapping a scenario file holds),
        writing its request log to ``log`` if given; returns once it answers."""
        port = self._next
        self._next += 1
        path = self._folder / f"scenario-{port}.json"
        path.write_text(json.dumps(scenario), encoding="utf-8")
        argv = [*BACKSTAY, "fake-provider", "serve", "--port", str(port), "--scenario", str(path)]
        process = self.namespace.popen(
            argv if log is None else [*argv, "--log", str(log)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        served = Served(self.namespace, f"http://127.0.0.1:{port}", process)
        assert served.stats()["requests"] == 0
        return served

    def shared(self, key: str, scenario: Mapping[str, Any]) -> Served:
        """A provider for ``scenario`` shared by the tests of a module under ``key`` (only
        for scenarios whose answers do not depend on the requests that came before)."""
        if key not in self._shared:
            self._shared[key] = self.serve(scenario)
        return self._shared[key]


def namespace_providers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Providers]:
    """For a module-scoped fixture: one namespace for a test module, in which each test
    starts the providers it needs; skips where no namespace can be made."""
    reason = unavailable_reason()
    if reason is not None:
        pytest.skip(f"no network namespace here: {reason}")
    with NetworkNamespace() as namespace:
        yield Providers(namespace, tmp_path_factory.mktemp("providers"))
