"""``RedisReportReads``: the ``ReportReads`` of ``RedisTaskStore`` (see
``backstay.engine.report_reads``).

Redis does the picking, as SQLite's ``json_extract`` does: a page of tasks is one Lua
script that decodes each task's spec, row and attempts in Redis (``cjson``), adds up the
attempts, and answers with one JSON text of each task's ``TaskLine`` fields in order —
one round trip and one reply string per page, not a reply element per field (parsing
those in Python was most of the report's time); Python reads each line with
``TaskLine._make``. A page of one state's tasks is taken from that state's sorted set by
score (registration order) inside the same script, so no list of every id is read first.
A page of attempts is one script too (a range of the ``attempt-order`` list), answering
each attempt's ``AttemptFact`` or ``AttemptTimes`` fields (the failure's code picked out
in Redis). The keys a script reads are named from its arguments, all under the tasks'
hash tag (one Cluster slot), as ``ensure_index`` does.

Numbers go back as ``%.17g`` text inside the JSON (a whole number with ``.0``, as Python
wrote it), which Python reads back as the very float; sums are made in the order of the
attempts' numbers, as a Python sum makes them. A value a compact line cannot carry
exactly (a token count that is not a whole number, a model named by a non-string, a
field of another kind) makes the script hand back the stored texts instead, read in
Python as before (``_line``, ``_stored_fact``).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Final

from backstay.engine.report_reads import AttemptFact, AttemptTimes, TaskLine
from backstay.engine.states import TaskState
from backstay.engine.task_index import TaskFilter
from backstay.store.redis._task_move import text

if TYPE_CHECKING:
    from backstay.store.redis._client import RedisConnection

__all__ = ["RedisReportReads"]

_STATES: Final = {state.value: state for state in TaskState}
# The fields of an attempt the attempts' script picks (a stored row has 12).
_FACT: Final = 6
_TIMES: Final = 4
# line(op, task prefix, attempt prefix): nil when the task is gone; else the JSON text of
# its stored texts [op, spec, row, attempts' hash] when a field is not what a compact line
# carries, otherwise of the fields of its ``TaskLine`` in order (the spec's text in place
# of the fallbacks when it names some; the cost as %.17g, which Python reads back as the
# very float).
_LINE: Final = r"""
local null = cjson.null
local function whole(v)
  if v == nil then return 0 end
  if type(v) == 'number' and v == math.floor(v) and math.abs(v) < 1e14 then return v end
  return nil
end
local function name(v)
  if v == nil or v == null then return null end
  if type(v) == 'string' then return v end
  return nil
end
local function line(op, tp, ap)
  local found = redis.call('HMGET', tp .. op, 'spec', 'row')
  local spec_raw, row_raw = found[1], found[2]
  if not spec_raw or not row_raw then return nil end
  local flat = redis.call('HGETALL', ap .. op)
  local raw = cjson.encode({op, spec_raw, row_raw, flat})
  local spec, row = cjson.decode(spec_raw), cjson.decode(row_raw)
  if type(spec) ~= 'table' or type(row) ~= 'table' then return raw end
  local task_id, adapter, model = spec.task_id, spec.adapter, spec.model
  local state, reason = row[1], row[2]
  if type(task_id) ~= 'string' or type(adapter) ~= 'string' or type(model) ~= 'string'
      or type(state) ~= 'string' or type(reason) ~= 'string' then
    return raw
  end
  local fallbacks = null
  if spec.fallbacks ~= nil and spec.fallbacks ~= null then fallbacks = spec_raw end
  local requested, answered = null, null
  local result = row[6]
  if result ~= nil and result ~= null then
    if type(result) ~= 'string' then return raw end
    local r = cjson.decode(result)
    if type(r) == 'table' then
      requested, answered = name(r.requested_model), name(r.model)
      if requested == nil or answered == nil then return raw end
    end
  end
  local numbers, by_number = {}, {}
  for j = 1, #flat, 2 do
    local n = tonumber(flat[j])
    if n == nil or by_number[n] ~= nil then return raw end
    numbers[#numbers + 1] = n
    by_number[n] = flat[j + 1]
  end
  if #numbers > 1 then table.sort(numbers) end
  local failed, cost = 0, 0
  local tokens = {0, 0, 0, 0}
  local fields = {'input_tokens', 'output_tokens', 'cache_read_tokens', 'cache_write_tokens'}
  local last_dir, last_candidate = null, null
  for _, n in ipairs(numbers) do
    local a = cjson.decode(by_number[n])
    if type(a) ~= 'table' or #a < 12 then return raw end
    if a[8] ~= null then failed = failed + 1 end
    local u = a[11]
    if u ~= null then
      if type(u) ~= 'string' then return raw end
      u = cjson.decode(u)
      if type(u) ~= 'table' then return raw end
      for k = 1, 4 do
        local v = whole(u[fields[k]])
        if v == nil then return raw end
        tokens[k] = tokens[k] + v
      end
      local c = u.cost_usd
      if c == nil or c == null or c == false then c = 0 end
      if type(c) ~= 'number' then return raw end
      cost = cost + c
    end
    last_dir, last_candidate = name(a[4]), name(a[12])
    if last_dir == nil or last_candidate == nil then return raw end
  end
  for k = 1, 4 do
    if whole(tokens[k]) == nil then return raw end
  end
  if cost ~= cost or cost == math.huge or cost == -math.huge then return raw end
  local cost_text = string.format('%.17g', cost)
  if not string.find(cost_text, '[.e]') then cost_text = cost_text .. '.0' end
  local run_id = string.match(op, '^.*:(.*)$') or op
  local head = cjson.encode({op, task_id, run_id, state, reason, adapter,
                             model, fallbacks, requested, answered, #numbers, failed,
                             last_dir, last_candidate, tokens[1], tokens[2], tokens[3],
                             tokens[4]})
  return string.sub(head, 1, -2) .. ',' .. cost_text .. ']'
end
"""
# KEYS: attempt-order (unread: it takes the script to the node of the tasks' slot);
# ARGV: the key prefix of tasks ("…:t:"), of attempts ("…:a:"), then operation ids.
_LINES_OF: Final = (
    _LINE
    + """
local out = {}
for i = 3, #ARGV do
  local found = line(ARGV[i], ARGV[1], ARGV[2])
  if found then out[#out + 1] = found end
end
return '[' .. table.concat(out, ',') .. ']'
"""
)
# KEYS: the sorted set of a state's tasks; ARGV: the key prefixes of tasks and attempts,
# the score after which to start ("(12", or "-inf"), the page's size. Answers the JSON of
# the last score read (nil: none), how many ids were read, the JSON array of the lines.
_LINES_IN: Final = (
    _LINE
    + """
local found = redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[3], '+inf', 'WITHSCORES',
                         'LIMIT', 0, tonumber(ARGV[4]))
local out = {}
for i = 1, #found, 2 do
  local one = line(found[i], ARGV[1], ARGV[2])
  if one then out[#out + 1] = one end
end
local last = false
if #found > 0 then last = found[#found] end
return {last, #found / 2, '[' .. table.concat(out, ',') .. ']'}
"""
)
# KEYS: attempt-order; ARGV: first, last index, the key prefix of attempts ("…:a:"),
# "facts" or "times". Answers how many entries the range held and the JSON array of their
# attempts, each the fields of an ``AttemptFact`` (started, ended, outcome, delay, failure
# code, whether it carried a provider's wait) or of an ``AttemptTimes`` (the first four),
# numbers as %.17g (which Python reads back as the very float; a whole number gets ".0",
# as Python wrote it), or its stored row when a field is not of its kind.
_ATTEMPTS: Final = r"""
local null = cjson.null
local function num(v)
  if v == null then return 'null' end
  if type(v) ~= 'number' or v ~= v or v == math.huge or v == -math.huge then return nil end
  local text = string.format('%.17g', v)
  if not string.find(text, '[.e]') then text = text .. '.0' end
  return text
end
local facts = ARGV[4] == 'facts'
local function picked(a)
  if type(a) ~= 'table' or #a < 12 or type(a[7]) ~= 'string' then return nil end
  local started, ended, delay = num(a[5]), num(a[6]), num(a[9])
  if not started or started == 'null' or not ended or not delay then return nil end
  local head = '[' .. started .. ',' .. ended .. ',' .. cjson.encode(a[7]) .. ',' .. delay
  if not facts then return head .. ']' end
  if a[8] == null then return head .. ',null,false]' end
  if type(a[8]) ~= 'string' then return nil end
  local failure = cjson.decode(a[8])
  if type(failure) ~= 'table' or type(failure.code) ~= 'string' then return nil end
  local waited = failure.retry_after_ms ~= nil and failure.retry_after_ms ~= null
  return head .. ',' .. cjson.encode(failure.code) .. ',' .. tostring(waited) .. ']'
end
local entries = redis.call('LRANGE', KEYS[1], ARGV[1], ARGV[2])
local out = {}
for _, entry in ipairs(entries) do
  local at = string.find(entry, '\31', 1, true)
  local row = redis.call('HGET', ARGV[3] .. string.sub(entry, 1, at - 1), string.sub(entry, at + 1))
  if row then out[#out + 1] = picked(cjson.decode(row)) or row end
end
return {#entries, '[' .. table.concat(out, ',') .. ']'}
"""


def _line(op: str, spec_raw: bytes | str, row_raw: bytes | str, flat: list[Any]) -> TaskLine:
    """The line of ``op`` from its spec, row and attempts' hash (``[number, row, …]``)."""
    spec = json.loads(spec_raw)
    row = json.loads(row_raw)
    result = {} if row[5] is None else json.loads(row[5])
    numbered = sorted(zip(flat[::2], flat[1::2], strict=True), key=lambda i: int(i[0]))
    attempts = [json.loads(raw) for _, raw in numbered]
    usages = [json.loads(a[10]) for a in attempts if a[10] is not None]
    fallbacks = spec.get("fallbacks")
    last = attempts[-1] if attempts else None
    return TaskLine(
        operation_id=op,
        task_id=spec["task_id"],
        task_run_id=op.rpartition(":")[2],
        state=TaskState(row[0]),
        reason=row[1],
        adapter=spec["adapter"],
        model=spec["model"],
        fallbacks=None if fallbacks is None else json.dumps(fallbacks, sort_keys=True),
        requested_model=result.get("requested_model") if isinstance(result, dict) else None,
        answered_model=result.get("model") if isinstance(result, dict) else None,
        attempts=len(attempts),
        failed_attempts=sum(1 for a in attempts if a[7] is not None),
        last_output_dir=None if last is None else last[3],
        last_candidate=None if last is None else last[11],
        input_tokens=sum(u.get("input_tokens", 0) for u in usages),
        output_tokens=sum(u.get("output_tokens", 0) for u in usages),
        cache_read_tokens=sum(u.get("cache_read_tokens", 0) for u in usages),
        cache_write_tokens=sum(u.get("cache_write_tokens", 0) for u in usages),
        cost_usd=sum(u.get("cost_usd") or 0.0 for u in usages),
    )


def _lines(found: Any) -> list[TaskLine]:
    """The lines of a script's entries."""
    out, make = [], TaskLine._make
    for e in found:
        if len(e) == 4:  # the task's stored texts
            out.append(_line(e[0], e[1], e[2], e[3] if isinstance(e[3], list) else []))
            continue
        e[3] = _STATES.get(e[3]) or TaskState(e[3])
        if e[7] is not None:
            e[7] = _fallbacks(e[7])
        out.append(make(e))
    return out


def _fallbacks(spec_raw: str) -> str:
    return json.dumps(json.loads(spec_raw)["fallbacks"], sort_keys=True)


def _stored_fact(row: list[Any]) -> AttemptFact:
    """The fact of an attempt's stored row."""
    failure = None if row[7] is None else json.loads(row[7])
    return AttemptFact(
        started_at=row[4],
        ended_at=row[5],
        outcome=row[6],
        delay_s=row[8],
        code=None if failure is None else failure["code"],
        retry_after=failure is not None and failure.get("retry_after_ms") is not None,
    )


class RedisReportReads:
    """The report's reads; mixed into ``RedisTaskStore`` (its connection and keys)."""

    _conn: RedisConnection
    _attempt_order: str

    if TYPE_CHECKING:

        def _ids(self, where: TaskFilter) -> list[str]: ...
        def _task_key(self, operation_id: str) -> str: ...
        def _attempt_key(self, operation_id: str) -> str: ...

    def report_snapshot(self) -> AbstractContextManager[None]:
        """Nothing to hold: each page is read as it stands (a task that moves meanwhile
        may be counted in one state and listed in the next)."""
        return contextlib.nullcontext()

    def _script(self, source: str, keys: list[str], args: list[Any]) -> Any:
        script = self._conn.client.register_script(source)
        return self._conn.call(lambda client: script(keys=keys, args=args, client=client))

    def report_lines(self, where: TaskFilter, *, size: int) -> Iterator[tuple[TaskLine, ...]]:
        prefixes = [self._conn.key("tasks", "t", ""), self._conn.key("tasks", "a", "")]
        if where.task_glob is None and where.states is not None and len(where.states) == 1:
            yield from self._lines_in(next(iter(where.states)), prefixes, size)
            return
        ids = self._ids(where)
        for start in range(0, len(ids), size):
            chunk = ids[start : start + size]
            found = json.loads(self._script(_LINES_OF, [self._attempt_order], [*prefixes, *chunk]))
            # A task that moved out of the selected states since its id was read is left out.
            page = tuple(
                line for line in _lines(found) if where.states is None or line.state in where.states
            )
            if page:
                yield page

    def _lines_in(
        self, state: TaskState, prefixes: list[str], size: int
    ) -> Iterator[tuple[TaskLine, ...]]:
        """The lines of ``state``'s tasks, a page of its sorted set at a time."""
        key = self._conn.key("tasks", "in", state.value)
        after = "-inf"
        while True:
            last, read, found = self._script(_LINES_IN, [key], [*prefixes, after, size])
            found = json.loads(found)
            page = tuple(line for line in _lines(found) if line.state is state)
            if page:
                yield page
            if last is None or read < size:
                return
            after = f"({text(last)}"

    def _attempt_rows(self, size: int, kind: str) -> Iterator[list[list[Any]]]:
        """Pages of attempts (``kind``: "facts" or "times"), in the order they were made."""
        prefix = self._conn.key("tasks", "a", "")
        start = 0
        while True:
            read, rows = self._script(
                _ATTEMPTS, [self._attempt_order], [start, start + size - 1, prefix, kind]
            )
            found = json.loads(rows)
            if found:
                yield found
            if read < size:
                return
            start += size

    def attempt_facts(self, *, size: int) -> Iterator[tuple[AttemptFact, ...]]:
        make = AttemptFact._make
        for page in self._attempt_rows(size, "facts"):
            yield tuple(make(a) if len(a) == _FACT else _stored_fact(a) for a in page)

    def attempt_times(self, *, size: int) -> Iterator[tuple[AttemptTimes, ...]]:
        make = AttemptTimes._make
        for page in self._attempt_rows(size, "times"):
            yield tuple(
                make(a) if len(a) == _TIMES else AttemptTimes(a[4], a[5], a[6], a[8]) for a in page
            )
