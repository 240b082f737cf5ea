"""Registering a batch on Redis a page at a time, in windows of at most ``WINDOW`` tasks
a script, all of it or none of it as far as a crash goes.

``register_pages`` (``RedisTaskStore.register_each``) reads the specs a page at a time and
pushes each page, encoded, onto a staging list of its own (``{ns:tasks}:staging:<token>``,
expiring a day later); nothing the store shows changes meanwhile, so a process killed
then leaves nothing registered (and a spec refused on the way deletes the list at once).
Then, in one ``MULTI``, the list is kept for good and the batch's header
(``{ns:tasks}:registration``, ``backstay.engine.registration.Registration``: how many tasks,
how many are in, the list and the new row in its source) is written: from there the
commit is under way and is never lost. Each window is one Lua script that registers the
next ``WINDOW`` tasks of the list as ``RedisTaskStore``'s register script does (a spec is
updated, a known task keeps its state, a new one is counted and indexed) and moves the
header on; the last one deletes the list and the header. A runner killed between windows
leaves the header: ``commit_staged`` (``RedisTaskStore.finish_staged``, run by
``Engine.resume`` and ``backstay resume``) registers the rest, and readers see the batch as
still being recorded until then (``status``, ``health``).

No script holds Redis for more than a window (about 10-30 ms on a loaded machine), so
other clients are never answered ``BUSY`` by a batch's registration. A window whose reply
is late is sent again; it finds the header moved past it and does nothing.

``RedisRegistration`` is the store's side of a batch recorded a page at a time from its
source while its first tasks run (``backstay.engine.registration``): each page and its
header in one script.
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

__all__ = ["PAGE", "WINDOW", "RedisRegistration", "commit_staged", "register_pages"]

# Specs encoded and pushed at once; each commit script registers a window as large.
PAGE: Final = 1000
WINDOW: Final = PAGE
# A staging list left by a killed process goes away on its own.
_STAGING_TTL_S: Final = 86_400
# How long the commit is waited for when its reply is late, and the pause between tries
# while Redis answers that it is busy running it.
_COMMIT_WAIT_S: Final = 300.0
_BUSY_PAUSE_S: Final = 0.5

# KEYS: order, counts, the pending set, the staging list, the header; ARGV: the first
# task of the window, the window's size (tasks), the prefix of the task keys. The list
# holds operation_id, spec, … and the header (JSON) how many of them are in, and in its
# source the new row. A window is registered only when the header says it is next, so a
# window sent again (its reply was late) finds itself in and does nothing.
_WINDOW: Final = """
local kept = redis.call('GET', KEYS[5])
if not kept then
  return -1
end
local header = cjson.decode(kept)
local start = tonumber(ARGV[1])
if tonumber(header['recorded']) ~= start then
  return tonumber(header['recorded'])
end
local row = cjson.decode(header['source'])['row']
local prefix = ARGV[3]
local items = redis.call('LRANGE', KEYS[4], start * 2, (start + tonumber(ARGV[2])) * 2 - 1)
local added = 0
for i = 1, #items, 2 do
  local op, spec = items[i], items[i + 1]
  local key = prefix .. op
  if redis.call('HSETNX', key, 'row', row) == 1 then
    local seq = redis.call('RPUSH', KEYS[1], op)
    redis.call('HSET', key, 'spec', spec, 'seq', seq)
    redis.call('ZADD', KEYS[3], seq, op)
    added = added + 1
  else
    redis.call('HSET', key, 'spec', spec)
  end
end
if added > 0 then
  redis.call('HINCRBY', KEYS[2], 'pending', added)
end
local recorded = start + #items / 2
if recorded >= tonumber(header['total']) or #items == 0 then
  redis.call('DEL', KEYS[4], KEYS[5])
else
  header['recorded'] = recorded
  redis.call('SET', KEYS[5], cjson.encode(header))
end
return recorded
"""


def register_pages(
    conn: RedisConnection, specs: Iterable[TaskSpec], *, row: list[Any], order: str
) -> int:
    """Register ``specs`` (read once, ``PAGE`` at a time) with ``row`` as a new task's row
    and ``order`` as the store's order list (see the module docstring); how many were
    given."""
    staging = conn.key("tasks", "staging", secrets.token_hex(8))
    count = 0
    begun = False
    try:
        for page in _pages(specs):
            args: list[str] = []
            for spec in page:
                args += [spec.operation_id, encode_spec(spec)]
            conn.call(functools.partial(_push, staging=staging, args=args))
            count += len(page)
        if count:
            header = Registration(
                total=count,
                recorded=0,
                ids_sha256="",
                source=json.dumps({"staging": staging, "row": json.dumps(row)}),
                started_at=_dt.datetime.now(_dt.UTC),
            )
            header_key = conn.key("tasks", "registration")
            conn.call(functools.partial(_begin, staging=staging, key=header_key, header=header))
        begun = True
    finally:
        if not begun and count:  # refused or cut short: the list goes now, or expires
            with contextlib.suppress(Exception):
                conn.call(lambda client: client.delete(staging))
    if count:
        commit_staged(conn, order=order)
    return count


def commit_staged(conn: RedisConnection, *, order: str) -> int:
    """Register what is left of a staged batch whose commit begun (``register_pages``, or
    one whose runner was killed while it committed), ``WINDOW`` tasks a script; how many
    tasks were registered now (0 when no commit is left)."""
    header_key = conn.key("tasks", "registration")
    kept = conn.call(lambda client: client.get(header_key))
    if kept is None:
        return 0
    header = Registration.from_json(kept)
    staging = json.loads(header.source).get("staging")
    if not isinstance(staging, str):
        return 0  # a batch recorded a page at a time from its source, not staged
    keys = [order, conn.key("tasks", "counts"), state_set(conn, "pending"), staging, header_key]
    script = conn.client.register_script(_WINDOW)
    start = header.recorded
    while 0 <= start < header.total:
        args = [str(start), str(WINDOW), conn.key("tasks", "t", "")]
        start = int(conn.call(functools.partial(_commit, script, keys=keys, args=args)))
    return header.total - header.recorded


def _begin(client: Any, *, staging: str, key: str, header: Registration) -> None:
    pipe = client.pipeline(transaction=True)
    pipe.persist(staging)  # kept until its last window is in: the commit is under way
    pipe.set(key, header.to_json())
    pipe.execute()


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

    def finish_staged(self) -> int:
        """Register what is left of a staged batch whose runner was killed while it
        committed it (``commit_staged``); how many tasks."""
        return commit_staged(self._conn, order=self._order)

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


def _commit(commit: Script, client: Any, *, keys: list[str], args: list[str]) -> Any:
    deadline = time.monotonic() + _COMMIT_WAIT_S
    while True:
        try:
            return commit(keys=keys, args=args, client=client)
        except redis.exceptions.TimeoutError:
            if time.monotonic() > deadline:
                raise
            # It runs on in Redis; sent again, it runs after it and finds nothing.
        except redis.exceptions.ResponseError as exc:
            if not str(exc).startswith("BUSY") or time.monotonic() > deadline:
                raise
            time.sleep(_BUSY_PAUSE_S)  # Redis says so while a script runs past its limit


def _push(client: Any, *, staging: str, args: list[str]) -> None:
    pipe = client.pipeline(transaction=True)
    pipe.rpush(staging, *args)
    pipe.expire(staging, _STAGING_TTL_S)
    pipe.execute()
