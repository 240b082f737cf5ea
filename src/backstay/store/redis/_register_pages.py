"""Registering a batch on Redis a page at a time, all of it or none of it.

The specs are read from their iterable a page at a time and each page is pushed, encoded,
onto a staging list of its own (``{ns:tasks}:staging:<token>``, never read by anything
else); one Lua script then registers every task of the list as ``RedisTaskStore``'s
register script does (a spec is updated, a known task keeps its state, a new one is
counted and indexed) and deletes the list. Only that script changes what the store shows,
and Redis runs a script whole: a process killed before it leaves nothing registered but
a staging list, which expires a day later (and is deleted at once when a spec is refused
before the commit). No page is held in memory after it is pushed.

The commit keeps Redis busy while it runs (about a second per 100,000 tasks on a quiet
machine, as registering a batch in one script always did); a reply that outlasts the
client's socket timeout is waited for by sending the script again (Redis answers ``BUSY``
until the first one ends, then runs it, and it finds the list gone: nothing is registered
twice).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import functools
import json
import secrets
import time
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from typing import Any, Final

import redis.exceptions
from redis.commands.core import Script

from backstay.engine._spec_codec import encode_spec
from backstay.engine.registration import Registration
from backstay.engine.task import TaskSpec
from backstay.store.redis._client import RedisConnection
from backstay.store.redis.task_index import state_set

__all__ = ["PAGE", "RedisRegistration", "register_pages"]

# Specs encoded and pushed at once; the commit script reads the list in windows as large.
PAGE: Final = 1000
# A staging list left by a killed process goes away on its own.
_STAGING_TTL_S: Final = 86_400
# How long the commit is waited for when its reply is late, and the pause between tries
# while Redis answers that it is busy running it.
_COMMIT_WAIT_S: Final = 300.0
_BUSY_PAUSE_S: Final = 0.5

# KEYS: order, counts, the pending set, the staging list; ARGV: the new row, the prefix of
# the task keys, the window. The list holds operation_id, spec, operation_id, spec, …
_COMMIT: Final = """
local total = redis.call('LLEN', KEYS[4])
local window = tonumber(ARGV[3]) * 2
local added = 0
for first = 0, total - 1, window do
  local items = redis.call('LRANGE', KEYS[4], first, first + window - 1)
  for i = 1, #items, 2 do
    local op, spec = items[i], items[i + 1]
    local key = ARGV[2] .. op
    if redis.call('HSETNX', key, 'row', ARGV[1]) == 1 then
      local seq = redis.call('RPUSH', KEYS[1], op)
      redis.call('HSET', key, 'spec', spec, 'seq', seq)
      redis.call('ZADD', KEYS[3], seq, op)
      added = added + 1
    else
      redis.call('HSET', key, 'spec', spec)
    end
  end
end
if added > 0 then
  redis.call('HINCRBY', KEYS[2], 'pending', added)
end
redis.call('DEL', KEYS[4])
return total / 2
"""


def register_pages(
    conn: RedisConnection, specs: Iterable[TaskSpec], *, row: list[Any], order: str
) -> int:
    """Register ``specs`` (read once, ``PAGE`` at a time) with ``row`` as a new task's row
    and ``order`` as the store's order list, all at once (see the module docstring); how
    many were given."""
    staging = conn.key("tasks", "staging", secrets.token_hex(8))
    count = 0
    committed = False
    try:
        for page in _pages(specs):
            args: list[str] = []
            for spec in page:
                args += [spec.operation_id, encode_spec(spec)]
            conn.call(functools.partial(_push, staging=staging, args=args))
            count += len(page)
        if count:
            keys = [order, conn.key("tasks", "counts"), state_set(conn, "pending"), staging]
            argv = [json.dumps(row), conn.key("tasks", "t", ""), str(PAGE)]
            commit = conn.client.register_script(_COMMIT)
            conn.call(functools.partial(_commit, commit, keys=keys, args=argv))
        committed = True
    finally:
        if not committed and count:  # refused or cut short: the list goes now, or expires
            with contextlib.suppress(Exception):
                conn.call(lambda client: client.delete(staging))
    return count


# One page of a batch recorded a page at a time (``backstay.engine.registration``) and
# its header, in one script. KEYS: order, counts, the pending set, the header, then each
# task's key; ARGV: first page or not, the header's recorded count, its total, the header
# (JSON), then per task operation_id, spec, new row. A page sent again (its reply was
# late) registers nothing new and moves the header on no further.
_PAGE: Final = """
for i = 5, #KEYS do
  local op, spec, row = ARGV[3 * i - 10], ARGV[3 * i - 9], ARGV[3 * i - 8]
  redis.call('HSET', KEYS[i], 'spec', spec)
  if redis.call('HSETNX', KEYS[i], 'row', row) == 1 then
    local seq = redis.call('RPUSH', KEYS[1], op)
    redis.call('HSET', KEYS[i], 'seq', seq)
    redis.call('HINCRBY', KEYS[2], 'pending', 1)
    redis.call('ZADD', KEYS[3], seq, op)
  end
end
local recorded, total = tonumber(ARGV[2]), tonumber(ARGV[3])
if ARGV[1] ~= '1' then
  local kept = redis.call('GET', KEYS[4])
  if not kept or cjson.decode(kept)['recorded'] >= recorded then
    return #KEYS - 4
  end
end
if recorded >= total then
  redis.call('DEL', KEYS[4])
else
  redis.call('SET', KEYS[4], ARGV[4])
end
return #KEYS - 4
"""


class RedisRegistration:
    """``PagedRegistration`` for ``RedisTaskStore`` (its connection, order list and task
    keys): each page and its header in one script of at most ``PAGE`` tasks."""

    _conn: RedisConnection
    _order: str

    def _header_key(self) -> str:
        return self._conn.key("tasks", "registration")

    def register_page(
        self, specs: Sequence[TaskSpec], *, at: _dt.datetime, header: Registration
    ) -> int:
        keys = [
            self._order,
            self._conn.key("tasks", "counts"),
            state_set(self._conn, "pending"),
            self._header_key(),
        ]
        first = header.recorded == len(specs)
        args = ["1" if first else "0", str(header.recorded), str(header.total), header.to_json()]
        row = json.dumps(_new_row(at))
        for spec in specs:
            keys.append(self._conn.key("tasks", "t", spec.operation_id))
            args += [spec.operation_id, encode_spec(spec), row]
        script = self._conn.client.register_script(_PAGE)
        self._conn.call(functools.partial(_commit, script, keys=keys, args=args))
        return len(specs)

    def registration(self) -> Registration | None:
        key = self._header_key()
        kept = self._conn.call(lambda client: client.get(key))
        return None if kept is None else Registration.from_json(kept)


def _new_row(at: _dt.datetime) -> list[Any]:
    """A new task's row, as ``RedisTaskStore`` registers one."""
    when = at.timestamp()
    return ["pending", "registered", 0, 0, None, None, when, when]


def _pages(specs: Iterable[TaskSpec]) -> Iterator[list[TaskSpec]]:
    it = iter(specs)
    while page := list(islice(it, PAGE)):
        yield page


def _commit(commit: Script, client: Any, *, keys: list[str], args: list[str]) -> None:
    deadline = time.monotonic() + _COMMIT_WAIT_S
    while True:
        try:
            commit(keys=keys, args=args, client=client)
        except redis.exceptions.TimeoutError:
            if time.monotonic() > deadline:
                raise
            # It runs on in Redis; sent again, it runs after it and finds nothing.
        except redis.exceptions.ResponseError as exc:
            if not str(exc).startswith("BUSY") or time.monotonic() > deadline:
                raise
            time.sleep(_BUSY_PAUSE_S)  # Redis says so while a script runs past its limit
        else:
            return


def _push(client: Any, *, staging: str, args: list[str]) -> None:
    pipe = client.pipeline(transaction=True)
    pipe.rpush(staging, *args)
    pipe.expire(staging, _STAGING_TTL_S)
    pipe.execute()
