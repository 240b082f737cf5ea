"""Fake providers inside a private network namespace, started in milliseconds.

One helper process runs inside the namespace (so its servers are reachable only from
there) and starts a ``FakeProvider`` per scenario on request: each test gets fresh fault
counters without paying a process start. Commands are JSON lines on its stdin; every
answer is one JSON line on its stdout, read with a bound on the wait.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest

from backstay.testing.netns import NetworkNamespace, unavailable_reason

ANSWER_TIMEOUT_S: Final = 30.0
_HELPER: Final = """
import json, sys
from backstay.fakeprovider import FakeProvider, load_scenario
fakes = {}
for line in sys.stdin:
    command = json.loads(line)
    op = command["op"]
    if op == "start":
        fake = FakeProvider(load_scenario(command["scenario"]))
        fake.__enter__()
        fakes[fake.url] = fake
        answer = {"url": fake.url}
    elif op == "stats":
        answer = fakes[command["url"]].stats().to_dict()
    else:
        fakes.pop(command["url"]).stop()
        answer = {"stopped": True}
    print(json.dumps(answer), flush=True)
"""


class FakePool:
    """Starts and stops fake providers inside ``namespace``; see the module docstring."""

    def __init__(self, namespace: NetworkNamespace, folder: Path) -> None:
        self._folder = folder
        self._proc = namespace.popen(
            [sys.executable, "-c", _HELPER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self._answers: queue.Queue[str] = queue.Queue()
        self._lock = threading.Lock()
        self._count = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            self._answers.put(line)

    def _ask(self, command: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            assert self._proc.stdin is not None
            self._proc.stdin.write(json.dumps(command) + "\n")
            self._proc.stdin.flush()
            try:
                answer: dict[str, Any] = json.loads(self._answers.get(timeout=ANSWER_TIMEOUT_S))
            except queue.Empty:
                pytest.fail(f"the fake provider pool did not answer {command['op']!r}")
            return answer

    def start(self, scenario: dict[str, Any]) -> str:
        """A new fake provider acting out ``scenario`` (the YAML scenario format, as a
        dict); its base URL."""
        self._count += 1
        path = self._folder / f"scenario-{self._count}.json"
        path.write_text(json.dumps(scenario), encoding="utf-8")
        return str(self._ask({"op": "start", "scenario": str(path)})["url"])

    def stats(self, url: str) -> dict[str, Any]:
        """What the fake at ``url`` counted (``Stats.to_dict()``)."""
        return self._ask({"op": "stats", "url": url})

    def stop(self, url: str) -> None:
        self._ask({"op": "stop", "url": url})


@pytest.fixture(scope="module")
def netns_pool(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[NetworkNamespace, FakePool]]:
    """A namespace for the module's tests and a pool of fake providers inside it."""
    reason = unavailable_reason()
    if reason is not None:
        pytest.skip(f"no network namespace here: {reason}")
    with NetworkNamespace() as namespace:
        yield namespace, FakePool(namespace, tmp_path_factory.mktemp("scenarios"))
