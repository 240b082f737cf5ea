"""NetworkNamespace: only loopback inside, servers inside reachable only inside, and
nothing it started is left running. Real namespaces, real processes; skipped with the
reason where namespaces cannot be made."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.adapters.support import alive, gone_within

from backstay.adapters.capture import Capture
from backstay.adapters.cli.process import run_process_sync
from backstay.adapters.contract import TIMEOUT_EXIT_CODE
from backstay.testing.netns import (
    NamespaceUnavailable,
    NetworkNamespace,
    processes_in,
    unavailable_reason,
)

PY = [sys.executable, "-I", "-c"]

# Route lookups and connects to TEST-NET-1 (192.0.2.0/24, never routed). A UDP connect
# only looks up a route and sends nothing; the TCP connect is tried only when no route
# exists, so no packet can leave even if the namespace were not private.
REACH_OUTSIDE = """
import json, socket
out = {"interfaces": [name for _, name in socket.if_nameindex()]}
try:
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).connect(("192.0.2.1", 9))
    out["udp"] = "route"
except OSError as exc:
    out["udp"] = exc.errno
    try:
        socket.create_connection(("192.0.2.1", 80), timeout=2)
        out["tcp"] = "connected"
    except OSError as exc:
        out["tcp"] = exc.errno
print(json.dumps(out))
"""

SERVE = """
import http.server, sys
class Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"hello from inside")
    def log_message(self, *args): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Hello).serve_forever()
"""

FETCH = """
import sys, time, urllib.request
for _ in range(100):
    try:
        print(urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/", timeout=2).read().decode())
        break
    except OSError:
        time.sleep(0.05)
"""


def needs_namespaces() -> None:
    reason = unavailable_reason()
    if reason is not None:
        pytest.skip(f"no network namespace here: {reason}")


def free_host_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_only_loopback_exists_inside_and_other_addresses_are_unreachable(
    backstay_netns: NetworkNamespace,
) -> None:
    done = backstay_netns.run([*PY, REACH_OUTSIDE], timeout_s=20)
    seen = json.loads(done.stdout)
    assert seen["interfaces"] == ["lo"]
    assert seen["udp"] == 101  # ENETUNREACH: no route at all
    assert seen["tcp"] == 101


def test_a_server_inside_is_reachable_inside_and_not_from_outside(
    backstay_netns: NetworkNamespace,
) -> None:
    port = free_host_port()  # free outside too, so "refused" below means "not reachable"
    server = backstay_netns.popen([*PY, SERVE, str(port)])
    done = backstay_netns.run([*PY, FETCH, str(port)], timeout_s=20)
    assert done.stdout.strip() == "hello from inside"
    assert server.poll() is None
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()


def test_close_kills_every_process_it_started_and_their_children(tmp_path: Path) -> None:
    spawn = (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen(['sleep', '60'])\n"
        "print(child.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    needs_namespaces()
    with NetworkNamespace() as ns:
        parent = ns.popen([*PY, spawn], stdout=subprocess.PIPE, text=True)
        assert parent.stdout is not None
        grandchild = int(parent.stdout.readline())
        server = ns.popen([*PY, SERVE, "8080"])
        pids = (*ns.pids, grandchild)
        assert all(alive(pid) for pid in pids)
        assert server.pid in pids
    assert all(gone_within(pid) for pid in pids)


def test_close_kills_a_process_that_left_its_group_and_the_namespace_is_empty() -> None:
    escape = (
        "import os, subprocess\n"
        "quiet = {'stdout': subprocess.DEVNULL, 'stderr': subprocess.DEVNULL}\n"
        "child = subprocess.Popen(['setsid', 'sleep', '60'], **quiet)\n"
        "print(child.pid, flush=True)\n"
    )
    needs_namespaces()
    with NetworkNamespace() as ns:
        done = ns.run([*PY, escape], timeout_s=20)
        escaped = int(done.stdout)
        assert alive(escaped)
        assert escaped in ns.members()
        assert ns.holder_pid in ns.members()
        net = ns.net
    assert gone_within(escaped)
    assert processes_in(net) == []


def test_run_past_its_timeout_kills_the_command(backstay_netns: NetworkNamespace) -> None:
    with pytest.raises(subprocess.TimeoutExpired):
        backstay_netns.run(["sleep", "30"], timeout_s=0.5)
    started = backstay_netns.pids[-1]
    assert gone_within(started)


def test_the_holder_exits_when_the_process_that_made_it_dies() -> None:
    orphaning = (
        "import os\n"
        "from backstay.testing.netns import NetworkNamespace\n"
        "ns = NetworkNamespace().start()\n"
        "print(ns.holder_pid, flush=True)\n"
        "os._exit(0)\n"
    )
    needs_namespaces()
    done = subprocess.run(
        [sys.executable, "-c", orphaning], capture_output=True, text=True, timeout=30, check=True
    )
    assert gone_within(int(done.stdout), 5)


def test_run_process_with_the_launcher_runs_inside_and_still_kills_at_the_deadline(
    backstay_netns: NetworkNamespace, tmp_path: Path
) -> None:
    interfaces = "import socket; print([n for _, n in socket.if_nameindex()])"
    with Capture(tmp_path / "out") as capture:
        outcome = run_process_sync(
            [*PY, interfaces],
            cwd=tmp_path,
            env={},
            timeout_s=20,
            capture=capture,
            launcher=backstay_netns.launcher,
        )
        assert outcome.exit_code == 0
        assert outcome.stdout_tail.strip() == "['lo']"
        started = time.monotonic()
        slow = run_process_sync(
            ["sleep", "30"],
            cwd=tmp_path,
            env={"PATH": "/usr/bin:/bin"},
            timeout_s=0.5,
            capture=capture,
            launcher=backstay_netns.launcher,
            kill_grace_s=0.5,
        )
    assert (slow.exit_code, slow.timed_out) == (TIMEOUT_EXIT_CODE, True)
    assert time.monotonic() - started < 20
    assert gone_within(slow.pid)


def test_without_unshare_it_says_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(NamespaceUnavailable, match="missing: unshare, nsenter"):
        NetworkNamespace().start()


def test_the_launcher_needs_a_running_namespace() -> None:
    ns = NetworkNamespace()
    with pytest.raises(RuntimeError, match="not running"):
        _ = ns.launcher
