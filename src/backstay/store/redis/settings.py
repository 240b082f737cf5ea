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
"""

from __future__ import annotations

from functools import partial
from typing import Any, Final

import redis

from backstay.store.redis._client import RedisConnection

__all__ = ["NEEDED", "check_server"]

NEEDED: Final = {"maxmemory-policy": "noeviction", "appendonly": "yes"}
_WHY: Final = {
    "maxmemory-policy": "Redis may evict leases, results and task records under memory "
    "pressure, and evicted work runs again",
    "appendonly": "a Redis restart loses what was written since the last snapshot, and "
    "finished tasks run again",
}


def _text(raw: Any) -> str:
    return raw.decode() if isinstance(raw, bytes) else str(raw)


def _config_get(client: Any, *, name: str) -> Any:
    return client.config_get(name)


def check_server(conn: RedisConnection) -> tuple[str, ...]:
    """Warnings about the server's settings (empty when all are as needed)."""
    where = conn.location.display
    out: list[str] = []
    for name, wanted in NEEDED.items():
        try:
            found: Any = conn.call(partial(_config_get, name=name))
        except redis.exceptions.ResponseError:
            out.append(
                f"{where}: cannot read {name} (CONFIG GET refused); make sure it is "
                f"{wanted}, or {_WHY[name]}"
            )
            continue
        value = _text(next(iter(found.values()), "")) if found else ""
        if value != wanted:
            out.append(
                f"{where}: {name} is {value or 'unset'}, not {wanted}: {_WHY[name]} "
                f"(redis-cli CONFIG SET {name} {wanted}, and in redis.conf)"
            )
    return tuple(out)
