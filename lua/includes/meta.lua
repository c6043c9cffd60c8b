--[[
  The arena's meta hash (its fields: keys.lua), read at most once per call
  with one HMGET of every field a script may want, changed in memory, and
  written back once by flush_meta() with one HSET of the fields changed:
  counters are summed in the call, not sent as an HINCRBY each.

  Three fields are lower bounds that let a call skip a sorted-set lookup
  that would find nothing: reapat (no lease in `lexp` expires before it),
  delayat (no retry in `delayed` is due before it) and schedat (no queue in
  `sched` is due before it). Every add to those sets lowers its bound
  (lease_expiry, delay_item, sched_add); a removal leaves it (still a lower
  bound); the lookup, once the bound has passed, sets it to the set's
  earliest score again. A missing bound (an arena written before them)
  means "look".
]]
--@include "args"

-- Later than any Redis TIME in µs this side of the year 2255: "none".
local NEVER = 9007199254740991
local META_FIELDS = { 'v', 'held', 'turn', 'gap', 'lastserve', 'queued', 'leased', 'delayed', 'done', 'dead', 'expired', 'enqueued', 'qseq', 'maxAttempts', 'dedupeBits', 'dedupeSpan', 'dedupeSet', 'shards', 'reapat', 'delayat', 'schedat' }
local META = nil
local MDIRTY = {}

local function meta()
  if META then return META end
  local v = redis.call('HMGET', K_META, unpack(META_FIELDS))
  META = {}
  for i, f in ipairs(META_FIELDS) do
    if v[i] then META[f] = v[i] end
  end
  return META
end

-- A meta field's value (a string), or nil.
local function mget(field)
  return meta()[field]
end

local function mset(field, value)
  meta()[field] = value
  MDIRTY[field] = true
end

local function mincr(field, by)
  local n = tonumber(mget(field) or '0') + by
  mset(field, fmt(n))
  return n
end

local function flush_meta()
  local args = {}
  for f in pairs(MDIRTY) do
    args[#args + 1] = f
    args[#args + 1] = META[f]
  end
  if #args > 0 then redis.call('HSET', K_META, unpack(args)) end
  MDIRTY = {}
end

-- Lowers a bound field to `at` (µs).
local function lower_bound(field, at)
  local b = tonumber(mget(field) or '')
  if b == nil or at < b then mset(field, fmt(at)) end
end

-- Whether a lookup bounded by `field` may find something due at `now`.
local function bound_passed(field, now)
  local b = tonumber(mget(field) or '')
  return b == nil or b <= now
end

-- The earliest score in a sorted set, or nil when it is empty.
local function earliest(zkey)
  local r = redis.call('ZRANGE', zkey, 0, 0, 'WITHSCORES')
  if r[2] then return tonumber(r[2]) end
  return nil
end

-- After a lookup: the bound is the set's earliest score again (NEVER when empty).
local function reset_bound(field, zkey)
  mset(field, fmt(earliest(zkey) or NEVER))
end

local function ensure_schema()
  local v = mget('v')
  -- Version 1 differs only where a queue's open chunk is kept, moved queue
  -- by queue as each is touched (items.lua).
  if v and v ~= SCHEMA_VERSION and v ~= '1' then
    raise('WEIR_SCHEMA', 'arena was written with key-schema version ' .. v .. ', these scripts use ' .. SCHEMA_VERSION)
  end
  return v
end

-- A script that places queues (enqueue, setLimits) is told the caller's
-- shard count of the arena: a caller with another count (a stale or missing
-- layout: src/queue/layouts.ts) would put a queue in the wrong shard, so it
-- is refused, and re-reads the layout. A shard without the field is the one
-- shard of an arena without a layout.
local function check_shards(arg_index)
  local expected = int_arg(arg_index, 'shards', 1, MAX_SHARDS)
  local have = tonumber(mget('shards') or '1')
  if have ~= expected then
    raise('WEIR_SHARDS_CHANGED', 'the arena has ' .. fmt(have) .. ' shards, the caller thought ' .. expected)
  end
end

local function max_attempts()
  return tonumber(mget('maxAttempts') or DEFAULT_MAX_ATTEMPTS)
end
