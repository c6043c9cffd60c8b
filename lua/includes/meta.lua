--[[
  The arena's meta fields (keys.lua), in the state hash: read at most once
  per call with one HMGET, together with the records and open chunks of the
  queues the call already knows it will touch (prefetch), changed in
  memory, and written back once by the call's one HSET (arena.lua flush):
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
local META_FIELDS = { 'v', 'held', 'turn', 'gap', 'lastserve', 'queued', 'leased', 'delayed', 'done', 'dead', 'expired', 'enqueued', 'qseq', 'maxAttempts', 'dedupeBits', 'dedupeHashes', 'dedupeSpan', 'dedupeSet', 'shards', 'reapat', 'delayat', 'schedat', 'oldleases' }
local META = nil
local MDIRTY = {}
-- Queue ids whose records the meta read brings along, and what it brought:
-- qid -> { rec = record or false, tail = open chunk or false } (record.lua
-- and items.lua take them from there).
local PREFETCH = {}
local PREFETCHED = {}
-- Fields to write with the call's HSET besides meta and records (new leases).
local DEFERRED = {}
-- True when this call found no version in the state hash: a new arena, or
-- one written by key-schema 1 or 2 (its first write marks it: arena.lua).
local UNMARKED = false

-- Asks the meta read to bring a queue's record and open chunk along (only
-- before the first meta field is read; later, the record is read alone).
local function prefetch(qid)
  if not META then PREFETCH[#PREFETCH + 1] = qid end
end

-- Key-schema 1 and 2 kept the meta fields in a hash of their own and the
-- leases in another. Their fields are taken over here (a bounded move: the
-- meta hash has a couple of dozen fields); the leases stay where they are
-- until each ends (leases.lua, 'oldleases'). The first write then leaves
-- the old meta hash holding only v = 3, so older scripts refuse the arena.
local function adopt_older_meta()
  UNMARKED = true
  local old = redis.call('HGETALL', K_OLD_META)
  local fields = {}
  for i = 1, #old, 2 do fields[old[i]] = old[i + 1] end
  local v = fields.v
  if v == nil or v == SCHEMA_VERSION then return end
  if v ~= '1' and v ~= '2' then
    raise('WEIR_SCHEMA', 'arena was written with key-schema version ' .. v .. ', these scripts use ' .. SCHEMA_VERSION)
  end
  for f, value in pairs(fields) do
    -- (A field written since, by a client of this version, stays: shards.)
    if META[f] == nil then
      META[f] = value
      MDIRTY[f] = true
    end
  end
  if redis.call('EXISTS', K_OLD_LEASES) == 1 then
    META.oldleases = '1'
    MDIRTY.oldleases = true
  end
end

local function meta()
  if META then return META end
  local nmeta = #META_FIELDS
  local fields = {}
  for i = 1, nmeta do fields[i] = META_FIELDS[i] end
  for _, qid in ipairs(PREFETCH) do
    fields[#fields + 1] = qid
    fields[#fields + 1] = qid .. ':t'
  end
  local v = redis.call('HMGET', K_STATE, unpack(fields))
  META = {}
  for i = 1, nmeta do
    if v[i] then META[META_FIELDS[i]] = v[i] end
  end
  for j, qid in ipairs(PREFETCH) do
    PREFETCHED[qid] = { rec = v[nmeta + 2 * j - 1], tail = v[nmeta + 2 * j] }
  end
  PREFETCH = {}
  if not META.v then adopt_older_meta() end
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

-- A meta field removed, at once.
local function mdel(field)
  meta()[field] = nil
  MDIRTY[field] = nil
  redis.call('HDEL', K_STATE, field)
end

-- A field of the state hash written with the call's HSET.
local function defer_hset(field, value)
  DEFERRED[#DEFERRED + 1] = field
  DEFERRED[#DEFERRED + 1] = value
end

-- The changed meta fields as field/value pairs, appended to `args`. A call
-- that writes anything marks the arena with this version (and, the first
-- time, the old meta hash too: see adopt_older_meta).
local function flush_meta(args)
  if next(MDIRTY) == nil and #args == 0 then return args end
  if mget('v') ~= SCHEMA_VERSION then
    mset('v', SCHEMA_VERSION)
  end
  if UNMARKED then
    redis.call('DEL', K_OLD_META)
    redis.call('HSET', K_OLD_META, 'v', SCHEMA_VERSION)
    UNMARKED = false
  end
  for f in pairs(MDIRTY) do
    args[#args + 1] = f
    args[#args + 1] = META[f]
  end
  MDIRTY = {}
  return args
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
  -- (Versions 1 and 2 are taken on as they are used: adopt_older_meta, items.lua.)
  if v and v ~= SCHEMA_VERSION and v ~= '1' and v ~= '2' then
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
