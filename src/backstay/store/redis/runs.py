"""``RedisRunStore``: the agent runtime's checkpoints, approvals and tool cache in Redis,
the twin of ``SQLiteRunStore`` for a batch whose store is Redis.

Every key lives under one hash tag, ``{ns:runtime}`` (one Cluster slot, so a transaction
may touch any of them); tenants and run ids are quoted into key parts, so no two
(tenant, id) pairs share a key:

* ``run:<tenant>:<run_id>``: a hash of ``header`` (the record without plan and results)
  and ``plan``; ``steps:<tenant>:<run_id>``: a hash of step id → ``[seq, result]``;
* ``appr``: a hash of approval id → the approval (JSON, without its id);
  ``appr-key``: ``[tenant, run_id, key]`` → id (one approval per call of a run);
  ``appr-seq`` hands out the ids; ``appr-t:<tenant>``: the tenant's ids, oldest first;
* ``cache:<tenant>``: a hash of cache key → value (JSON).

The text of a checkpoint is ``runtime._run_codec``'s, as in SQLite. ``save_run`` and
``save_progress`` are one ``MULTI``/``EXEC`` each; ``request_approval`` and ``decide`` one
optimistic transaction (``_tx``) each, deciding with the same ``check_decision`` as the
other run stores. A ``decide`` whose reply was lost (Redis went away after ``EXEC``; the
connection's ``wait`` mode runs it again) finds its own decision and answers with it.
"""

from __future__ import annotations

import dataclasses
import json
import urllib.parse
from collections.abc import Mapping
from typing import Any

import redis
from redis.client import Pipeline

from backstay.clock import SYSTEM_CLOCK
from backstay.runtime._run_codec import decode_run, header_text, plan_text, step_text
from backstay.runtime.records import Approval, ApprovalStatus, RunRecord
from backstay.runtime.results import StepResult
from backstay.runtime.store import check_decision
from backstay.store.redis._client import RedisConnection
from backstay.store.redis._task_move import text
from backstay.store.redis._tx import transact

__all__ = ["TAG", "RedisRunStore", "part"]

TAG = "runtime"


def part(value: str) -> str:
    """``value`` as one key part: quoted, so it holds no ``:``."""
    return urllib.parse.quote(value, safe="")


def _encode_approval(approval: Approval) -> str:
    data = dataclasses.asdict(approval)
    del data["id"]
    data["status"] = str(approval.status)
    return json.dumps(data, sort_keys=True)


def _decode_approval(approval_id: int, raw: bytes | str) -> Approval:
    data = json.loads(raw)
    return Approval(id=approval_id, **{**data, "status": ApprovalStatus(data["status"])})


class RedisRunStore:
    """A ``RunStore`` in the Redis of ``conn``, under its namespace. Thread-safe."""

    def __init__(self, conn: RedisConnection) -> None:
        self._conn = conn
        self._approvals = conn.key(TAG, "appr")
        self._by_key = conn.key(TAG, "appr-key")
        self._seq = conn.key(TAG, "appr-seq")

    def _run_key(self, tenant: str, run_id: str) -> str:
        return self._conn.key(TAG, "run", part(tenant), part(run_id))

    def _steps_key(self, tenant: str, run_id: str) -> str:
        return self._conn.key(TAG, "steps", part(tenant), part(run_id))

    def _tenant_key(self, tenant: str) -> str:
        return self._conn.key(TAG, "appr-t", part(tenant))

    def _cache_key(self, tenant: str) -> str:
        return self._conn.key(TAG, "cache", part(tenant))

    # -- checkpoints ------------------------------------------------------------------

    def _header(self, pipe: Pipeline, record: RunRecord, *, with_plan: bool) -> None:
        key = self._run_key(record.tenant, record.run_id)
        pipe.hset(key, mapping={"header": header_text(record), "status": str(record.status)})
        if with_plan:
            plan = plan_text(record)
            if plan is None:
                pipe.hdel(key, "plan")
            else:
                pipe.hset(key, "plan", plan)

    def save_run(self, record: RunRecord) -> None:
        """Store ``record`` whole (its step results replace those stored)."""
        steps = self._steps_key(record.tenant, record.run_id)

        def write(client: redis.Redis) -> None:
            pipe = client.pipeline(transaction=True)
            self._header(pipe, record, with_plan=True)
            pipe.delete(steps)
            for seq, result in enumerate(record.results):
                pipe.hset(steps, result.step_id, json.dumps([seq, step_text(result)]))
            pipe.execute()

        self._conn.call(write)

    def save_progress(self, record: RunRecord, result: StepResult) -> None:
        """The header without the plan (``save_run`` wrote it) and the newest result."""
        seq = next(i for i, r in enumerate(record.results) if r.step_id == result.step_id)
        steps = self._steps_key(record.tenant, record.run_id)

        def write(client: redis.Redis) -> None:
            pipe = client.pipeline(transaction=True)
            self._header(pipe, record, with_plan=False)
            pipe.hset(steps, result.step_id, json.dumps([seq, step_text(result)]))
            pipe.execute()

        self._conn.call(write)

    def load_run(self, tenant: str, run_id: str) -> RunRecord | None:
        key, steps = self._run_key(tenant, run_id), self._steps_key(tenant, run_id)

        def read(client: redis.Redis) -> list[Any]:
            pipe = client.pipeline(transaction=True)
            pipe.hmget(key, "header", "plan")
            pipe.hvals(steps)
            return list(pipe.execute())

        (header, plan), found = self._conn.call(read)
        if header is None:
            return None
        ordered = sorted((json.loads(raw) for raw in found), key=lambda entry: entry[0])
        return decode_run(header, plan, (entry[1] for entry in ordered))

    # -- approvals --------------------------------------------------------------------

    def _approval(self, approval_id: int) -> Approval | None:
        raw = self._conn.call(lambda client: client.hget(self._approvals, str(approval_id)))
        return None if raw is None else _decode_approval(approval_id, raw)

    def request_approval(
        self, tenant: str, run_id: str, *, tool: str, key: str, arguments: Mapping[str, Any]
    ) -> Approval:
        """The approval of this call of the run: the one recorded, else a new pending one."""
        field = json.dumps([tenant, run_id, key])
        listed = self._tenant_key(tenant)

        def decide(pipe: Pipeline, now: float) -> Approval:
            del now
            found = pipe.hget(self._by_key, field)
            raw = None if found is None else pipe.hget(self._approvals, text(found))
            if found is not None and raw is not None:
                pipe.multi()
                return _decode_approval(int(found), raw)
            approval_id = int(pipe.get(self._seq) or 0) + 1
            new = Approval(
                id=approval_id,
                tenant=tenant,
                run_id=run_id,
                tool=tool,
                key=key,
                arguments=dict(arguments),
            )
            encoded = _encode_approval(new)
            pipe.multi()
            pipe.set(self._seq, approval_id)
            pipe.hset(self._approvals, str(approval_id), encoded)
            pipe.hset(self._by_key, field, approval_id)
            pipe.rpush(listed, approval_id)
            return _decode_approval(approval_id, encoded)  # as it reads back

        return transact(self._conn, [self._by_key, self._seq], decide, clock=SYSTEM_CLOCK)

    def approval_for(self, tenant: str, run_id: str, key: str) -> Approval | None:
        field = json.dumps([tenant, run_id, key])
        found = self._conn.call(lambda client: client.hget(self._by_key, field))
        return None if found is None else self._approval(int(found))

    def approvals(self, tenant: str, *, open_only: bool = True) -> tuple[Approval, ...]:
        listed = self._tenant_key(tenant)

        def read(client: redis.Redis) -> list[tuple[int, Any]]:
            ids = [int(text(i)) for i in client.lrange(listed, 0, -1)]
            raws = client.hmget(self._approvals, [str(i) for i in ids]) if ids else []
            return list(zip(ids, raws, strict=True))

        found = (_decode_approval(i, raw) for i, raw in self._conn.call(read) if raw is not None)
        return tuple(
            a for a in found if a.tenant == tenant and not (open_only and a.status.decided)
        )

    def decide(
        self,
        tenant: str,
        approval_id: int,
        status: ApprovalStatus,
        *,
        edited_arguments: Mapping[str, Any] | None = None,
        note: str = "",
        by: str = "human",
    ) -> Approval:
        status = ApprovalStatus(status)
        edited = None if edited_arguments is None else dict(edited_arguments)
        conn = self._conn

        def decide(pipe: Pipeline, now: float) -> Approval:
            del now
            raw = pipe.hget(self._approvals, str(approval_id))
            found = None if raw is None else _decode_approval(approval_id, raw)
            found = found if found is not None and found.tenant == tenant else None
            if found is not None and conn.replaying:
                mine = dataclasses.replace(
                    found, status=status, edited_arguments=edited, note=note, by=by
                )
                if found == mine:  # this very decision, applied before the reply was lost
                    pipe.multi()
                    return found
            found = check_decision(found, status, approval_id)
            decided = dataclasses.replace(
                found, status=status, edited_arguments=edited, note=note, by=by
            )
            pipe.multi()
            pipe.hset(self._approvals, str(approval_id), _encode_approval(decided))
            return decided

        return transact(self._conn, [self._approvals], decide, clock=SYSTEM_CLOCK)

    # -- tool cache -------------------------------------------------------------------

    def cache_get(self, tenant: str, key: str) -> tuple[bool, Any]:
        cache = self._cache_key(tenant)
        raw = self._conn.call(lambda client: client.hget(cache, key))
        return (False, None) if raw is None else (True, json.loads(raw))

    def cache_put(self, tenant: str, key: str, value: Any) -> None:
        cache = self._cache_key(tenant)
        encoded = json.dumps(value, sort_keys=True, default=str)
        self._conn.call(lambda client: client.hset(cache, key, encoded))

    def close(self) -> None:
        """The connection belongs to whoever opened it; nothing to close here."""
