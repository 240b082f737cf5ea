"""Each real CLI, run inside a private network namespace against the fake provider started
in the same namespace: it answers a prompt through loopback only, the fake sees exactly
the calls the CLI is known to make, the key is never printed, and nothing is left running.

Skipped, with the reason, when the CLI is not installed (`make agents`) or namespaces
cannot be made here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Final

import pytest
from tests.adapters.support import gone_within
from tests.agents.clis import BUILDERS, CALLS, CANARY_KEY, private_home

from backstay.agents import CLIS, Located, agents_dir, locate
from backstay.agents.install import current_install
from backstay.testing.netns import NetworkNamespace, processes_in

# The namespace has its own ports: this one is always free inside.
PORT: Final = 8400
URL: Final = f"http://127.0.0.1:{PORT}"
BACKSTAY: Final = [sys.executable, "-c", "from backstay.cli import main; main()"]
# Prints the fake provider's counters (at the URL given as argument) once it answers.
STATS: Final = """
import sys, time, urllib.request
for _ in range(200):
    try:
        print(urllib.request.urlopen(sys.argv[1] + "/_backstay/stats", timeout=1).read().decode())
        break
    except OSError:
        time.sleep(0.05)
"""
RUN_TIMEOUT_S: Final = 120.0


def installed(name: str) -> Located:
    root = agents_dir()
    manifest, reason = current_install(CLIS[name], root)
    if manifest is None:
        pytest.skip(f"{name} is not installed in {root} ({reason}): run `make agents`")
    return locate(name)


def stats(ns: NetworkNamespace, url: str = URL) -> dict[str, Any]:
    done = ns.run([sys.executable, "-I", "-c", STATS, url], timeout_s=30)
    assert done.stdout.strip(), f"the fake provider did not answer: {done.stderr}"
    data: dict[str, Any] = json.loads(done.stdout)
    return data


@pytest.mark.parametrize("name", list(CLIS))
def test_the_cli_answers_through_the_fake_provider_inside_the_namespace(
    name: str, backstay_netns: NetworkNamespace, tmp_path: Path
) -> None:
    cli = installed(name)
    server = backstay_netns.popen(
        [*BACKSTAY, "fake-provider", "serve", "--port", str(PORT)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    assert stats(backstay_netns)["requests"] == 0
    work = tmp_path / "work"
    work.mkdir()
    run = BUILDERS[name](cli, URL, private_home(tmp_path) | dict(cli.offline_env), "say hi")
    done = backstay_netns.run(run.argv, env=run.env, cwd=work, timeout_s=RUN_TIMEOUT_S)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Fake reply to" in done.stdout
    assert CANARY_KEY not in done.stdout + done.stderr
    seen = stats(backstay_netns)
    assert seen["by_api"] == CALLS[name]
    assert seen["by_status"] == {"200": sum(CALLS[name].values())}
    started, net = backstay_netns.pids, backstay_netns.net
    backstay_netns.close()
    assert server.pid in started
    assert all(gone_within(pid) for pid in started)
    assert processes_in(net) == []
