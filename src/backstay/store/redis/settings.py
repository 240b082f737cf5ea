"""The Redis settings a backstay store needs, checked when it is opened.

* ``maxmemory-policy noeviction``: an evicted lease or result means an operation runs
  again, an evicted task record means a task is lost; with any other policy Redis may
  evict them under memory pressure.
* ``appendonly yes`` (with ``appendfsync everysec``): without the append-only file a
  Redis restart loses everything written since the last snapshot — finished tasks would
  look unfinished and run again.

``check_server`` returns one plain sentence per setting that is not as needed (or that
could not be read: managed services often refuse ``CONFIG GET``); the commands print them
as warnings. A store still opens: a test or a throwaway batch may not need durability.

On a Redis Cluster every node is asked (``CONFIG GET`` is per server, and each node holds
its own slots): the sentence names the nodes (``host:port``) whose setting is not as
needed, so one node left with an evicting policy is not hidden behind the others.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, Final

# redis-py when a server is asked through it: ``server_warnings`` words what a reader
# without it (``status_reads``) found.
if TYPE_CHECKING:
    from backstay.store.redis._client import RedisConnection

__all__ = ["NEEDED", "check_server", "server_warnings"]

NEEDED: Final = {"maxmemory-policy": "noeviction", "appendonly": "yes"}
_WHY: Final = {
    "maxmemory-policy": "Redis may evict leases, results and task records under memory "
    "pressure, and evicted work runs again",
    "appendonly": "a Redis restart loses what was written since the last snapshot, and "
    "finished tasks run again",
}


def _text(raw: Any) -> str:
    return raw.decode() if isinstance(raw, bytes) else str(raw)


def _value(found: Any) -> str:
    return _text(next(iter(found.values()), "")) if found else ""


def _config_get(client: Any, *, name: str) -> dict[str, str]:
    """``name``'s value per server: ``{"": value}`` for one server, ``{"host:port": value}``
    per node of a cluster."""
    from backstay.store.redis._client import is_cluster  # noqa: PLC0415 - see the imports

    if not is_cluster(client):
        return {"": _value(client.config_get(name))}
    return {
        node.name: _value(client.config_get(name, target_nodes=node)) for node in client.get_nodes()
    }


def _where(bad: list[str], every: int) -> str:
    """Which servers a sentence is about: none named for one server."""
    if bad == [""]:
        return ""
    if len(bad) == every:
        return " on every node"
    return f" on node{'s' if len(bad) > 1 else ''} {', '.join(bad)}"


def check_server(conn: RedisConnection) -> tuple[str, ...]:
    """Warnings about the server's settings (empty when all are as needed)."""
    import redis  # noqa: PLC0415 - see the imports

    found: dict[str, Mapping[str, str] | None] = {}
    for name in NEEDED:
        try:
            found[name] = conn.call(partial(_config_get, name=name))
        except redis.exceptions.ResponseError:
            found[name] = None
    return server_warnings(conn.location.display, found)


def server_warnings(where: str, found: Mapping[str, Mapping[str, str] | None]) -> tuple[str, ...]:
    """The warnings of ``where`` given each needed setting's values per server
    (``_config_get``'s), ``None`` where ``CONFIG GET`` was refused."""
    out: list[str] = []
    for name, wanted in NEEDED.items():
        values = found.get(name)
        if values is None:
            out.append(
                f"{where}: cannot read {name} (CONFIG GET refused); make sure it is "
                f"{wanted}, or {_WHY[name]}"
            )
            continue
        bad = sorted(server for server, value in values.items() if value != wanted)
        if bad:
            shown = " or ".join(sorted({values[server] or "unset" for server in bad}))
            out.append(
                f"{where}: {name} is {shown}{_where(bad, len(values))}, not {wanted}: "
                f"{_WHY[name]} (redis-cli CONFIG SET {name} {wanted}, and in redis.conf)"
            )
    return tuple(out)
