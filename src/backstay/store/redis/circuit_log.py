"""``RedisCircuitLog``: the engine's circuit log in Redis, one list ``{ns:circuits}:log``
of JSON entries in the order written (``RPUSH`` is atomic; nothing to coordinate)."""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Collection

from backstay.engine.circuit_log import CircuitChange, CircuitEntry
from backstay.store.redis._client import RedisConnection

__all__ = ["RedisCircuitLog"]


def _decode(raw: bytes | str) -> CircuitEntry:
    data = json.loads(raw)
    return CircuitEntry(
        breaker=data["breaker"],
        change=CircuitChange(data["change"]),
        at=_dt.datetime.fromtimestamp(data["at"], _dt.UTC),
        operation_id=data["operation_id"],
        reason=data["reason"],
        wait_s=data["wait_s"],
    )


class RedisCircuitLog:
    """The circuit log of one Redis namespace."""

    def __init__(self, conn: RedisConnection) -> None:
        self._conn = conn
        self._key = conn.key("circuits", "log")

    def add(self, entry: CircuitEntry) -> None:
        text = json.dumps(
            {
                "breaker": entry.breaker,
                "change": entry.change.value,
                "at": entry.at.timestamp(),
                "operation_id": entry.operation_id,
                "reason": entry.reason,
                "wait_s": entry.wait_s,
            }
        )
        self._conn.call(lambda client: client.rpush(self._key, text))

    def entries(self, operation_ids: Collection[str] | None = None) -> tuple[CircuitEntry, ...]:
        found = [_decode(raw) for raw in self._conn.call(lambda c: c.lrange(self._key, 0, -1))]
        if operation_ids is None:
            return tuple(found)
        return tuple(e for e in found if e.operation_id in operation_ids)

    def close(self) -> None:
        """The connection belongs to the bundle; nothing to close here."""
