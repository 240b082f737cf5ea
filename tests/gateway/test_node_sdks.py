"""The gateway as a drop-in base URL for any language: the official Node SDKs
(``@anthropic-ai/sdk``, ``openai``, pinned in tests/gateway/node/package.json), their own
retries off, get the success after a scripted 529 or 429 with ``retry-after``, JSON and
streamed; the provider saw the failed request and its retry, nothing more.

The SDKs are installed by ``scripts/install-node-sdks`` (run by ``make test``); where node
or the installed SDKs are missing (no npm, registry unreachable) the tests are skipped,
with the reason.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any, Final

import pytest
from tests.gateway.helpers import CANARY_KEY, served

from backstay.fakeprovider import Fault, FaultKind

NODE_DIR: Final = Path(__file__).with_name("node")
CLIENT: Final = NODE_DIR / "client.cjs"
PINS: Final = NODE_DIR / "package.json"
RUN_TIMEOUT_S: Final = 60.0
TEXT: Final = "Fake reply to: Write a haiku about resilient systems."


def _sdks_dir() -> Path:
    default = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return Path(os.environ.get("BACKSTAY_NODE_SDKS_DIR") or default / "backstay" / "node-sdks")


@pytest.fixture(scope="module")
def sdks() -> Path:
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    folder = _sdks_dir()
    stamp = folder / ".installed"
    if not stamp.is_file() or stamp.read_bytes() != PINS.read_bytes():
        pytest.skip(
            f"the pinned Node SDKs are not installed in {folder}: run scripts/install-node-sdks "
            "(make test does; it needs the npm registry)"
        )
    return folder


def _node(sdks: Path, api: str, *, stream: bool, url: str) -> dict[str, Any]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "BACKSTAY_NODE_SDKS": str(sdks),
        "BACKSTAY_TEST_KEY": CANARY_KEY,
    }
    done = subprocess.run(
        ["node", str(CLIENT), api, "stream" if stream else "json", url],
        capture_output=True,
        text=True,
        env=env,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    assert done.stdout.strip(), done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    assert CANARY_KEY not in done.stdout + done.stderr
    return result


CASES: Final = [
    ("anthropic", False, Fault(kind=FaultKind.OVERLOADED, first=1)),
    ("anthropic", True, Fault(kind=FaultKind.RATE_LIMIT, first=1, retry_after_s=0.2)),
    ("openai-chat", True, Fault(kind=FaultKind.RATE_LIMIT, first=1, retry_after_s=0.2)),
    ("openai-responses", True, Fault(kind=FaultKind.OVERLOADED, first=1)),
]


@pytest.mark.parametrize(
    ("api", "stream", "fault"),
    CASES,
    ids=[f"{a}-{'stream' if s else 'json'}-{f.kind}" for a, s, f in CASES],
)
def test_a_node_sdk_without_retries_gets_the_success_through_the_gateway(
    sdks: Path, tmp_path: Path, api: str, stream: bool, fault: Fault
) -> None:
    with served(tmp_path, fault) as s:
        result = _node(sdks, api, stream=stream, url=s.url)
        stats = s.fake.stats()
    assert result == {"ok": True, "text": TEXT}
    assert stats.requests == 2
    assert dict(stats.by_fault) == {str(fault.kind): 1}


def test_without_the_gateway_the_same_node_sdk_gets_the_529(sdks: Path, tmp_path: Path) -> None:
    with served(tmp_path, Fault(kind=FaultKind.OVERLOADED, first=1)) as s:
        result = _node(sdks, "anthropic", stream=False, url=s.fake.url)
        stats = s.fake.stats()
    assert (result["ok"], result["status"]) == (False, 529)
    assert stats.requests == 1
