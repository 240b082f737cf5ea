"""A real three-node Redis Cluster (Debian's ``redis-server`` in cluster mode) for the
tests: ``start_cluster`` starts the nodes on 127.0.0.1, joins them with ``redis-cli
--cluster create`` (every slot assigned, no replicas), waits until the cluster is ready
and stops every node by its PID on exit. ``tests/conftest.py`` starts one per test process
(``redis_cluster``) on first use; tests keep apart by namespace."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Final

import pytest
import redis
from tests.redis_server import RedisServer, free_port, start_redis

NODES: Final = 3
READY_S: Final = 20.0
# A cluster node also listens on its port + 10000 (the cluster bus).
BUS_OFFSET: Final = 10_000
CLUSTER_MODE: Final = ("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")


def cluster_tools() -> str | None:
    """``redis-cli``'s path when both it and ``redis-server`` are installed."""
    cli = shutil.which("redis-cli")
    return cli if shutil.which("redis-server") is not None else None


def _node_port() -> int:
    """A free port whose bus port (port + 10000) is a port, and free too."""
    for _ in range(100):
        port = free_port()
        if port + BUS_OFFSET > 65_535:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port + BUS_OFFSET))
            except OSError:
                continue
        return port
    raise AssertionError("no free port pair for a cluster node")


def _cluster_ok(port: int) -> bool:
    client = redis.Redis(port=port, socket_connect_timeout=0.5)
    try:
        info = client.execute_command("CLUSTER", "INFO")
    finally:
        client.close()
    text = info.decode() if isinstance(info, bytes) else str(info)
    return "cluster_state:ok" in text


@contextmanager
def start_cluster(cli: str) -> Iterator[list[RedisServer]]:
    """The nodes of a new cluster, ready (every slot assigned); stopped by PID on exit."""
    servers: list[RedisServer] = []
    try:
        servers.extend(  # one by one: those started before a failure are stopped
            start_redis(*CLUSTER_MODE, port=_node_port()) for _ in range(NODES)
        )
        nodes = [f"127.0.0.1:{server.port}" for server in servers]
        subprocess.run(
            [cli, "--cluster", "create", *nodes, "--cluster-replicas", "0", "--cluster-yes"],
            check=True,
            capture_output=True,
            timeout=60,
        )
        deadline = time.monotonic() + READY_S
        while not all(_cluster_ok(server.port) for server in servers):
            assert time.monotonic() < deadline, "the cluster did not become ready"
            time.sleep(0.1)
        yield servers
    finally:
        for server in servers:
            server.stop()


def behaviours(module: Any, names: list[str]) -> list[Any]:
    """The behaviour tests ``names`` of ``module``, as parameters (ids without ``test_``),
    to run again on the cluster."""
    return [pytest.param(getattr(module, name), id=name.removeprefix("test_")) for name in names]


def run_with_fixtures(behaviour: Callable[..., None], request: pytest.FixtureRequest) -> None:
    """Run a behaviour test with the fixtures its parameters name, as pytest would (the
    calling module overrides those that must point at the cluster)."""
    code = behaviour.__code__
    behaviour(
        **{name: request.getfixturevalue(name) for name in code.co_varnames[: code.co_argcount]}
    )
