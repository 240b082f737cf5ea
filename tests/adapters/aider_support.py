"""What the tests of the aider adapter against the real Aider share: the installed CLI (or a
skip saying why there is none), and fake providers started inside a network namespace, where
Aider runs too, each on its own port."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import pytest
import yaml

from backstay.agents import CLIS, Located, agents_dir, locate
from backstay.agents.install import current_install
from backstay.testing.netns import NetworkNamespace

# A key-shaped canary: it reaches the fake provider and must never be written anywhere.
CANARY_KEY: Final = "sk-proj-CanaryAiderKey0123456789abcdef"
# A model litellm knows, with a price: Aider reports its own cost for it.
MODEL: Final = "openai/gpt-4o-mini"
BACKSTAY: Final = [sys.executable, "-c", "from backstay.cli import main; main()"]
_STATS: Final = """
import sys, time, urllib.request
for _ in range(400):
    try:
        print(urllib.request.urlopen(sys.argv[1], timeout=1).read().decode())
        break
    except OSError:
        time.sleep(0.05)
"""
_PORTS = itertools.count(8400)
_STOP_GRACE_S: Final = 5.0


def installed_aider() -> Located:
    """The Aider ``make agents`` installed; the test is skipped, with the reason, without."""
    root = agents_dir()
    manifest, reason = current_install(CLIS["aider"], root)
    if manifest is None:
        pytest.skip(f"aider is not installed in {root} ({reason}): run `make agents`")
    return locate("aider")


def litellm_price(located: Located, model: str) -> tuple[float, float]:
    """USD per input and output token of ``model`` in the litellm price list Aider ships."""
    root = located.path.resolve().parent.parent
    [table] = root.glob("lib/python*/site-packages/litellm/model_prices_and_context_window*.json")
    entry = json.loads(table.read_text())[model]
    return float(entry["input_cost_per_token"]), float(entry["output_cost_per_token"])


class NamespacedFake:
    """``backstay fake-provider serve`` inside ``ns`` on a port of its own."""

    def __init__(
        self,
        ns: NetworkNamespace,
        folder: Path,
        *,
        faults: Sequence[Mapping[str, Any]] = (),
        reply: str | None = None,
    ) -> None:
        self.ns = ns
        self.port = next(_PORTS)
        scenario: dict[str, Any] = {"faults": [dict(f) for f in faults]}
        if reply is not None:
            scenario["reply"] = {"text": reply}
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"scenario-{self.port}.yaml"
        path.write_text(yaml.safe_dump(scenario))
        serve = ["fake-provider", "serve", "--port", str(self.port), "--scenario", str(path)]
        self.proc = ns.popen(
            [*BACKSTAY, *serve],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        assert self.stats()["requests"] == 0

    @property
    def url(self) -> str:
        """The base URL Aider is given (``--openai-api-base``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def stats(self) -> dict[str, Any]:
        """What the fake has served (``GET /_backstay/stats``), asked from inside."""
        done = self.ns.run(
            [sys.executable, "-I", "-c", _STATS, f"http://127.0.0.1:{self.port}/_backstay/stats"],
            timeout_s=30,
        )
        assert done.stdout.strip(), f"the fake provider did not answer: {done.stderr}"
        data: dict[str, Any] = json.loads(done.stdout)
        return data

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(_STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def files_under(folder: Path) -> str:
    """Every file under ``folder``, read as text and joined (for canary checks)."""
    return "\n".join(
        path.read_text(encoding="utf-8", errors="replace")
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    )
