"""The Lua scripts of the shared limiter and retry budget: one script per decision,
atomic on the server, time from Redis ``TIME``, every key passed in ``KEYS``.

A limiter's state is one hash (``KEYS[1]``): per dimension ``d`` (``r`` requests, ``t``
tokens) its bucket ``d_cap``, ``d_rate`` (per second), ``d_lvl`` (the level, below zero
while reservations queue) and ``d_at`` (when that level held; may lie in the future: a
block), plus ``blocked`` (Unix seconds until which nobody goes) and ``n`` (reservations
made). The bucket arithmetic is ``backstay.policy.bucket.TokenBucket``'s, written in Lua.
Numbers are stored with ``%.17g`` so nothing is lost to Lua's shorter ``tostring``.
"""

from __future__ import annotations

from typing import Final

__all__ = ["BLOCK", "BUDGET_CALL", "BUDGET_RETRY", "LEARN", "RESERVE"]

_COMMON: Final = """
local function now_s()
  local t = redis.call('TIME')
  return tonumber(t[1]) + tonumber(t[2]) / 1000000
end
local function fmt(x) return string.format('%.17g', x) end
local function get(key, field)
  local v = redis.call('HGET', key, field)
  if v then return tonumber(v) end
  return nil
end
local function level(key, d, now)
  local cap, rate = get(key, d .. '_cap'), get(key, d .. '_rate')
  local lvl, at = get(key, d .. '_lvl'), get(key, d .. '_at')
  if now <= at then return lvl end
  return math.min(cap, lvl + (now - at) * rate)
end
local function shape(key, d, per_minute, burst_s, now)
  -- size (or resize) dimension d for per_minute, keeping its level (capped)
  local rate = per_minute / 60.0
  local cap = math.max(1.0, rate * burst_s)
  local old = get(key, d .. '_cap')
  if old == nil then
    redis.call('HSET', key, d .. '_cap', fmt(cap), d .. '_rate', fmt(rate),
               d .. '_lvl', fmt(cap), d .. '_at', fmt(now))
    local blocked = get(key, 'blocked') or 0
    if blocked > now then
      redis.call('HSET', key, d .. '_lvl', '0', d .. '_at', fmt(blocked))
    end
    return
  end
  if old ~= cap or get(key, d .. '_rate') ~= rate then
    local at = get(key, d .. '_at')
    local lvl = level(key, d, now)
    if at < now then at = now end
    redis.call('HSET', key, d .. '_cap', fmt(cap), d .. '_rate', fmt(rate),
               d .. '_lvl', fmt(math.min(lvl, cap)), d .. '_at', fmt(at))
  end
end
"""

RESERVE: Final = (
    _COMMON
    + """
-- ARGV: tokens, configured rpm (or ''), configured tpm (or ''), burst_s, probe_timeout_s
-- (or ''/0: no discovery)
-- -> 'wait|requests reserved so far|tokens reserved so far|probe (1 or 0)', or, while
-- another caller's probe discovers the limits, 'wait|held' (the probe's time left)
local key, tokens, burst_s = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[4])
local now = now_s()
if ARGV[2] ~= '' and get(key, 'r_cap') == nil then
  shape(key, 'r', tonumber(ARGV[2]), burst_s, now)
end
if ARGV[3] ~= '' and get(key, 't_cap') == nil then
  shape(key, 't', tonumber(ARGV[3]), burst_s, now)
end
local probe = '0'
local probe_s = tonumber(ARGV[5] or '') or 0
if probe_s > 0 and get(key, 'r_cap') == nil and get(key, 't_cap') == nil
    and get(key, 'found') == nil then
  -- no limit known yet: the first caller of the fleet goes alone, the others wait for
  -- its answer (which teaches the limits or ends discovery), at most probe_s
  local probe_until = get(key, 'probe')
  if probe_until == nil then
    redis.call('HSET', key, 'probe', fmt(now + probe_s))
    probe = '1'
  elseif now < probe_until then
    return fmt(probe_until - now) .. '|held'
  else
    redis.call('HSET', key, 'found', '1')
  end
end
local wait = math.max(0, (get(key, 'blocked') or 0) - now)
for _, dc in ipairs({{'r', 1.0}, {'t', tokens}}) do
  local d, cost = dc[1], dc[2]
  if get(key, d .. '_cap') ~= nil then
    local at = get(key, d .. '_at')
    local start = math.max(now, at)
    local left = level(key, d, now) - cost
    local waited = (start - now) + math.max(0, -left) / get(key, d .. '_rate')
    redis.call('HSET', key, d .. '_lvl', fmt(left), d .. '_at', fmt(start))
    wait = math.max(wait, waited)
  end
end
local n = redis.call('HINCRBY', key, 'n', 1)
local tn = redis.call('HINCRBYFLOAT', key, 'tn', tokens)
return fmt(wait) .. '|' .. n .. '|' .. tn .. '|' .. probe
"""
)

BLOCK: Final = (
    _COMMON
    + """
-- ARGV: seconds -> the block's end (Unix seconds)
local key = KEYS[1]
local now = now_s()
redis.call('HSET', key, 'found', '1')  -- the provider has answered: discovery is over
local until_s = now + tonumber(ARGV[1])
local blocked = math.max(get(key, 'blocked') or 0, until_s)
redis.call('HSET', key, 'blocked', fmt(blocked))
for _, d in ipairs({'r', 't'}) do
  if get(key, d .. '_cap') ~= nil then
    local at = get(key, d .. '_at')
    local start = math.max(now, until_s)
    if start <= at then
      redis.call('HSET', key, d .. '_lvl', fmt(math.min(get(key, d .. '_lvl'), 0)))
    else
      local lvl = math.min(level(key, d, start), 0)
      redis.call('HSET', key, d .. '_lvl', fmt(lvl), d .. '_at', fmt(start))
    end
  end
end
return fmt(blocked)
"""
)

LEARN: Final = (
    _COMMON
    + """
-- ARGV: dimension (r|t), header limit (or ''), remaining (or ''), configured per minute
-- (or ''), burst_s, reset_s (or ''), max_block_s, reserved through the answered request
-- (or '': not known)
local key, d, burst_s = KEYS[1], ARGV[1], tonumber(ARGV[5])
local now = now_s()
redis.call('HSET', key, 'found', '1')  -- any headers end discovery
local per_minute = nil
if ARGV[4] ~= '' then per_minute = tonumber(ARGV[4]) end
if ARGV[2] ~= '' and tonumber(ARGV[2]) > 0 then
  local seen = tonumber(ARGV[2])
  if per_minute == nil or seen < per_minute then per_minute = seen end
end
if per_minute ~= nil then
  shape(key, d, per_minute, burst_s, now)
  if ARGV[3] ~= '' and ARGV[8] ~= '' then
    -- the provider's remaining when it counted the answered request, less what was
    -- reserved after it (it had not counted those yet); may raise the level as well
    local counter = 'n'
    if d == 't' then counter = 'tn' end
    local after = (get(key, counter) or 0) - tonumber(ARGV[8])
    local at = get(key, d .. '_at')
    local start = math.max(now, at)
    local lvl = math.min(get(key, d .. '_cap'), tonumber(ARGV[3])) - after
    if start > now then lvl = math.min(lvl, 0) end
    redis.call('HSET', key, d .. '_lvl', fmt(lvl), d .. '_at', fmt(start))
  elseif ARGV[3] ~= '' then
    local remaining = tonumber(ARGV[3])
    local at = get(key, d .. '_at')
    if now > at then
      local lvl = level(key, d, now)
      redis.call('HSET', key, d .. '_lvl', fmt(math.min(lvl, remaining)), d .. '_at', fmt(now))
    elseif get(key, d .. '_lvl') > remaining then
      redis.call('HSET', key, d .. '_lvl', fmt(remaining))
    end
  end
elseif ARGV[3] ~= '' and tonumber(ARGV[3]) <= 0 and ARGV[6] ~= '' then
  local until_s = now + math.min(tonumber(ARGV[6]), tonumber(ARGV[7]))
  redis.call('HSET', key, 'blocked', fmt(math.max(get(key, 'blocked') or 0, until_s)))
end
return 1
"""
)

_BUDGET_COMMON: Final = """
local function now_s()
  local t = redis.call('TIME')
  return tonumber(t[1]) + tonumber(t[2]) / 1000000
end
-- KEYS[1]: a hash of bucket index -> 'calls:retries:slot'; ARGV: window_s, buckets
local key, window_s, buckets = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2])
local width = window_s / buckets
local slot = math.floor(now_s() / width)
local calls, retries = 0, 0
local here_calls, here_retries = 0, 0
for i = 0, buckets - 1 do
  local v = redis.call('HGET', key, tostring(i))
  if v then
    local c, r, s = string.match(v, '^(%d+):(%d+):(%d+)$')
    s = tonumber(s)
    if s > slot - buckets then
      calls, retries = calls + tonumber(c), retries + tonumber(r)
      if s == slot then here_calls, here_retries = tonumber(c), tonumber(r) end
    end
  end
end
local index = tostring(slot % buckets)
redis.call('PEXPIRE', key, math.ceil(window_s * 2000))
"""

BUDGET_CALL: Final = (
    _BUDGET_COMMON
    + """
redis.call('HSET', key, index, (here_calls + 1) .. ':' .. here_retries .. ':' .. slot)
return 1
"""
)

BUDGET_RETRY: Final = (
    _BUDGET_COMMON
    + """
-- ARGV[3]: ratio, ARGV[4]: floor (min_retries_per_s * window_s), ARGV[5]: epsilon
local allowed = tonumber(ARGV[3]) * calls + tonumber(ARGV[4])
if retries + 1 > allowed + tonumber(ARGV[5]) then return 0 end
redis.call('HSET', key, index, here_calls .. ':' .. (here_retries + 1) .. ':' .. slot)
return 1
"""
)
