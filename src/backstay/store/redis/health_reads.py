"""What ``backstay health`` reads of a batch in Redis, without redis-py.

``read_health_facts`` reads, in two round trips of ``RespClient`` (``_resp``), the keys
the full stores would read for the check: the tasks' counts per state, the escalations,
the circuit log, the running tasks with their rows and operation records, and Redis
``TIME`` (a lease is live until its expiry by Redis's clock, as
``RedisOperationStore.holder`` decides). Nothing is written.

It answers ``None`` where the full stores must be opened instead (redis-py): a location
``RespClient`` does not take (``rediss://``, ``cluster=yes``, ``wait`` mode), or a
namespace not indexed yet (``RedisTaskStore`` indexes it when it opens it). Opening
fails as ``open_redis_stores`` does (``ConfigError`` naming the location, never its
password); a read that finds Redis gone is ``StoreUnreachable``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Final

from backstay.errors import ConfigError
from backstay.store.location import StoreLocation, StoreUnreachable
from backstay.store.redis._keys import key
from backstay.store.redis._resp import Reply, RespClient, RespError, supports

__all__ = ["HealthFacts", "read_health_facts"]

# The task states and fields as ``RedisTaskStore`` and ``RedisOperationStore`` keep them
# (tests/store/redis/test_health_reads.py compares these facts with the full stores').
_RUNNING: Final = "running"
_LEASED: Final = "leased"
_OPEN: Final = "open"
_ESCALATION_STATUS: Final = 6  # the field of an escalation's JSON row holding its status


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class HealthFacts:
    """``state_counts``: tasks per stored state; ``open_escalations``: escalations
    waiting for a person; ``circuit_changes``: the circuit log as (breaker, change), in
    order; ``running``: each task stored running, with the owner of its live lease
    (``None``: no live lease)."""

    state_counts: Mapping[str, int]
    open_escalations: int
    circuit_changes: tuple[tuple[str, str], ...]
    running: tuple[tuple[str, str | None], ...]
    # (recorded, total) of a batch still being recorded a page at a time, else ``None``.
    recording: tuple[int, int] | None = None


def connected(location: StoreLocation) -> RespClient:
    """A ``RespClient`` connected to ``location`` (``supports`` it); a server that does not
    answer or refuses is a ``ConfigError`` naming ``--store`` (never the password)."""
    client = RespClient(location)
    try:
        client.connect()
    except (StoreUnreachable, RespError) as exc:
        client.close()
        reason = exc.reason if isinstance(exc, StoreUnreachable) else str(exc)
        raise ConfigError(
            f"cannot reach Redis at {location.display}: {reason.splitlines()[0][:200]}",
            where="--store",
        ) from None
    return client


def read_health_facts(location: StoreLocation) -> HealthFacts | None:
    """The facts of the batch in ``location`` (see the module docstring); ``None`` when
    the full stores must read them."""
    if not supports(location):
        return None
    client = connected(location)
    try:
        return _read(client, location.namespace)
    except RespError as exc:
        raise ConfigError(f"{location.display}: {exc}", where="--store") from None
    finally:
        client.close()


def _read(client: RespClient, ns: str) -> HealthFacts | None:
    index, counts, escalations, log, running, now, header = client.pipeline(
        [
            ["GET", key(ns, "tasks", "index")],
            ["HGETALL", key(ns, "tasks", "counts")],
            ["HVALS", key(ns, "tasks", "esc")],
            ["LRANGE", key(ns, "circuits", "log"), 0, -1],
            ["ZRANGE", key(ns, "tasks", "in", _RUNNING), 0, -1],
            ["TIME"],
            ["GET", key(ns, "tasks", "registration")],  # engine.registration's header
        ]
    )
    if index is None:
        return None
    pairs = reply_list(counts)
    state_counts = {_text(pairs[i]): int(_text(pairs[i + 1])) for i in range(0, len(pairs), 2)}
    waiting = sum(
        1
        for raw in reply_list(escalations)
        if json.loads(reply_bytes(raw))[_ESCALATION_STATUS] == _OPEN
    )
    changes = []
    for raw in reply_list(log):
        entry = json.loads(reply_bytes(raw))
        changes.append((str(entry["breaker"]), str(entry["change"])))
    ops = [_text(op) for op in reply_list(running)]
    seconds, micros = (int(_text(part)) for part in reply_list(now))
    return HealthFacts(
        state_counts=state_counts,
        open_escalations=waiting,
        circuit_changes=tuple(changes),
        running=_holders(client, ns, ops, seconds + micros / 1_000_000),
        recording=None if header is None else _recording(reply_bytes(header)),
    )


def _recording(header: bytes) -> tuple[int, int]:
    data = json.loads(header)
    return int(data["recorded"]), int(data["total"])


def _holders(
    client: RespClient, ns: str, ops: list[str], now: float
) -> tuple[tuple[str, str | None], ...]:
    """Each of ``ops`` still stored running, with the owner of its live lease."""
    if not ops:
        return ()
    commands: list[list[str | bytes | int]] = []
    for op in ops:
        commands += [["HGET", key(ns, "tasks", "t", op), "row"], ["GET", key(ns, f"op:{op}")]]
    replies = client.pipeline(commands)
    found: list[tuple[str, str | None]] = []
    for i, op in enumerate(ops):
        row, record = replies[2 * i], replies[2 * i + 1]
        # A task that moved on since its id was read is left out, as the full stores do.
        if row is None or json.loads(reply_bytes(row))[0] != _RUNNING:
            continue
        found.append((op, live_owner(record, now)))
    return tuple(found)


def live_owner(raw: Reply, now: float) -> str | None:
    """The owner of the lease in an operation's record, if it is live at ``now``."""
    if raw is None:
        return None
    data = json.loads(reply_bytes(raw))
    expires = data.get("lease_expires_at")
    if data.get("state") != _LEASED or expires is None or expires <= now:
        return None
    owner = data.get("owner")
    return str(owner) if owner is not None else None


def reply_list(reply: Reply) -> list[Reply]:
    return reply if isinstance(reply, list) else []


def reply_bytes(reply: Reply) -> bytes:
    if not isinstance(reply, bytes):
        raise RespError(f"expected a text reply, got {type(reply).__name__}")
    return reply


def _text(reply: Reply) -> str:
    return reply_bytes(reply).decode()
