"""What ``backstay status`` reads of a batch in Redis, without redis-py.

``open_status_reads`` opens a ``RespReads`` (``_resp``: one socket, RESP2) over the keys
``RedisTaskStore`` and ``RedisOperationStore`` keep, and reads them as those stores do:

* the ``TaskIndex`` reads (``backstay.engine.task_index``): the counts per state, the
  tasks of some states a page at a time (each state's sorted set, by registration
  number), the attempts of some tasks, the open escalations;
* ``registration()``: the header of a batch still being recorded a page at a time;
* ``holder(operation_id)``: the owner of an operation's live lease, by Redis ``TIME``;
* ``warnings``: the server's settings, as ``settings.check_server`` words them.

Every read is a pipeline of a few commands; nothing is written. ``open_status_reads``
answers ``None`` where the full stores must be opened instead (redis-py): a location
``RespClient`` does not take (``rediss://``, ``cluster=yes``, ``wait`` mode), or a
namespace not indexed yet (``RedisTaskStore`` indexes it when it opens it). Opening fails
as ``open_redis_stores`` does (``ConfigError`` naming the location, never its password);
a read that finds Redis gone is ``StoreUnreachable``.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import Final

from backstay.engine.records import AttemptRecord, TaskRecord
from backstay.engine.registration import Registration
from backstay.engine.states import TaskState
from backstay.engine.task_index import TaskFilter
from backstay.idempotency.ids import parse_operation_id
from backstay.store import _task_rows as rows
from backstay.store.location import StoreLocation
from backstay.store.redis._keys import key
from backstay.store.redis._resp import Reply, RespClient, RespError, supports
from backstay.store.redis.health_reads import connected, live_owner, reply_bytes, reply_list
from backstay.store.redis.settings import NEEDED, server_warnings

__all__ = ["RespReads", "open_status_reads"]

_OPEN: Final = "open"
_ESCALATION_STATUS: Final = 6  # the field of an escalation's JSON row holding its status


def open_status_reads(
    location: StoreLocation, *, secrets: Mapping[str, str] | None = None
) -> RespReads | None:
    """The reads of the batch in ``location`` (see the module docstring); ``None`` when
    the full stores must read it. ``secrets``: the secret variables of specs read back."""
    if not supports(location):
        return None
    client = connected(location)
    try:
        (index,) = client.pipeline([["GET", key(location.namespace, "tasks", "index")]])
        if index is None:
            client.close()
            return None
        warnings = server_warnings(location.display, _settings(client))
    except BaseException:
        client.close()
        raise
    return RespReads(client, location.namespace, secrets=secrets, warnings=warnings)


def _settings(client: RespClient) -> dict[str, Mapping[str, str] | None]:
    """Each needed setting's value (``{"": value}``: one server), ``None`` when refused."""
    found: dict[str, Mapping[str, str] | None] = {}
    for name in NEEDED:
        try:
            (reply,) = client.pipeline([["CONFIG", "GET", name]])
        except RespError:
            found[name] = None
            continue
        pair = reply_list(reply)
        found[name] = {"": reply_bytes(pair[1]).decode() if len(pair) > 1 else ""}
    return found


def _task_id(operation_id: str) -> str:
    try:
        return parse_operation_id(operation_id).task_id
    except ValueError:
        return operation_id


class RespReads:
    """The reads of one namespace over ``client`` (see the module docstring); ``close()``
    when done."""

    def __init__(
        self,
        client: RespClient,
        namespace: str,
        *,
        secrets: Mapping[str, str] | None = None,
        warnings: Sequence[str] = (),
    ) -> None:
        self._client = client
        self._ns = namespace
        self._decode_spec = rows.spec_decoder(dict(secrets or {}))
        self.warnings = tuple(warnings)

    def _key(self, *parts: str) -> str:
        return key(self._ns, "tasks", *parts)

    def _one(self, *command: str | int) -> Reply:
        (reply,) = self._client.pipeline([list(command)])
        return reply

    # -- TaskIndex ----------------------------------------------------------------------

    def state_counts(self) -> dict[TaskState, int]:
        pairs = reply_list(self._one("HGETALL", self._key("counts")))
        counts = {
            reply_bytes(pairs[i]).decode(): int(reply_bytes(pairs[i + 1]))
            for i in range(0, len(pairs), 2)
        }
        return {state: counts.get(state.value, 0) for state in TaskState}

    def _ids(self, where: TaskFilter) -> list[str]:
        """The operation ids ``where`` selects, in registration order."""
        if where.states is None:
            found = reply_list(self._one("LRANGE", self._key("order"), 0, -1))
            ids = [reply_bytes(op).decode() for op in found]
        else:
            states = sorted(where.states)
            commands: list[list[str | bytes | int]] = [
                ["ZRANGE", self._key("in", state.value), 0, -1, "WITHSCORES"] for state in states
            ]
            scored: list[tuple[float, str]] = []
            for reply in self._client.pipeline(commands):
                flat = reply_list(reply)
                scored += [
                    (float(reply_bytes(flat[i + 1])), reply_bytes(flat[i]).decode())
                    for i in range(0, len(flat), 2)
                ]
            ids = [op for _, op in sorted(scored)]
        if where.task_glob is not None:
            only = TaskFilter(task_glob=where.task_glob)
            ids = [op for op in ids if only.admits(TaskState.PENDING, _task_id(op))]
        return ids

    def count(self, where: TaskFilter) -> int:
        if where.task_glob is None:
            counts = self.state_counts()
            return sum(n for s, n in counts.items() if where.states is None or s in where.states)
        return len(self._ids(where))

    def pages(self, where: TaskFilter, *, size: int) -> Iterator[tuple[TaskRecord, ...]]:
        ids = self._ids(where)
        for start in range(0, len(ids), size):
            chunk = ids[start : start + size]
            found = self._client.pipeline(
                [["HMGET", self._key("t", op), "spec", "row"] for op in chunk]
            )
            records = []
            for reply in found:
                spec, row = reply_list(reply) or [None, None]
                if spec is None or row is None:  # gone since its id was read
                    continue
                fields = (reply_bytes(spec).decode(), *json.loads(reply_bytes(row)))
                records.append(rows.decode_task(fields, self._decode_spec))
            # A task that moved out of the selected states since its id was read is left out.
            page = tuple(r for r in records if where.states is None or r.state in where.states)
            if page:
                yield page

    def attempts_of(self, operation_ids: Collection[str]) -> tuple[AttemptRecord, ...]:
        ids = list(operation_ids)
        if not ids:
            return ()
        found: list[AttemptRecord] = []
        for reply in self._client.pipeline([["HGETALL", self._key("a", op)] for op in ids]):
            flat = reply_list(reply)
            numbered = sorted(
                (int(reply_bytes(flat[i])), reply_bytes(flat[i + 1]))
                for i in range(0, len(flat), 2)
            )
            found += [rows.decode_attempt(tuple(json.loads(raw))) for _, raw in numbered]
        found.sort(key=lambda a: a.started_at)
        return tuple(found)

    def open_escalation_count(self) -> int:
        found = reply_list(self._one("HVALS", self._key("esc")))
        return sum(1 for raw in found if json.loads(reply_bytes(raw))[_ESCALATION_STATUS] == _OPEN)

    # -- the rest -----------------------------------------------------------------------

    def registration(self) -> Registration | None:
        """The header of a batch not yet wholly recorded (``engine.registration``)."""
        kept = self._one("GET", self._key("registration"))
        return None if kept is None else Registration.from_json(reply_bytes(kept))

    def holder(self, operation_id: str) -> str | None:
        """The owner of the live lease on ``operation_id``, or ``None``."""
        record, now = self._client.pipeline(
            [["GET", key(self._ns, f"op:{operation_id}")], ["TIME"]]
        )
        seconds, micros = (int(reply_bytes(part)) for part in reply_list(now))
        return live_owner(record, seconds + micros / 1_000_000)

    def close(self) -> None:
        self._client.close()
