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
local NEVER, FIELDC, DEFERRED, meta_reset, prefetch_field, prefetch, meta, mset, mget, mincr, mdel, defer_hset, defer_hdel, flush_meta, lower_bound, bound_passed, earliest, reset_bound, ensure_schema, check_shards, max_attempts
-- (The names other files use; the rest stay in the block: see arena.lua.)
do
  -- The key-schema version (keys.lua). 4: `ready` holds a keeper member
  -- (schedule.lua ZSET_KEEPER), which version 3's scripts would take for
  -- a queue. 3: meta fields and leases are fields of the state hash. 2: a
  -- queue's open chunk moved beside its record (items.lua). An arena of
  -- version 1, 2 or 3 is taken on as it is used (adopt_older_meta below;
  -- version 3 needs nothing moved: the keeper comes with the next queue made
  -- ready), and its first write marks it 4 (flush_meta), so older scripts
  -- refuse it from then on. (Kept in this block: the includes' top-level
  -- locals count against Lua's 200, test/queue/scripts.test.ts.)
  local SCHEMA_VERSION = '4'
  local TAKEN_ON = { ['1'] = true, ['2'] = true, ['3'] = true }
  -- Later than any Redis TIME in µs this side of the year 2255: "none".
  NEVER = 9007199254740991
  -- The numbers every call reads and most calls change, packed in field 'm'
  -- (struct '<d' each, in this order, which meta() and flush_meta spell
  -- out): one field to read and write, no
  -- number turned into text and back (string.format and tonumber cost more
  -- than the commands of a call). A field absent from an older arena is 0.
  local MPACKED = { 'turn', 'gap', 'lastserve', 'queued', 'leased', 'delayed', 'done', 'dead', 'expired', 'enqueued', 'qseq', 'reapat', 'delayat', 'schedat' }
  local MPACK_FMT = '<'
  local IS_PACKED = {}
  -- (A function library's top level, where this runs once at load, may use
  -- no global but `redis`: hence no ipairs.)
  for i = 1, #MPACKED do
    MPACK_FMT = MPACK_FMT .. 'd'
    IS_PACKED[MPACKED[i]] = true
  end
  -- Settings and marks are a field each (clients read some:
  -- src/queue/arena-admin.ts): v, held, maxAttempts, dedupeBits, dedupeHashes,
  -- dedupeSpan, dedupeSet, shards, oldleases (meta() reads them by name).
  local META = nil
  -- The settings changed in this call (field -> true), and whether any packed number was.
  local MDIRTY = {}
  local MPDIRTY = false
  -- Fields of the state hash this call has read besides the meta fields
  -- (records, chunks, leases: record.lua, items.lua, leases.lua): field ->
  -- value, or false when absent (nil: not read). Those named by prefetch and
  -- prefetch_field before the meta read come with it.
  local FIELDS_WANTED = {}
  FIELDC = {}
  -- Fields to write with the call's HSET besides meta and records (new
  -- leases): field -> value.
  DEFERRED = {}
  -- True when this call found no version in the state hash: a new arena, or
  -- one written by key-schema 1 or 2 (its first write marks it: arena.lua).
  local UNMARKED = false

  -- A new call: nothing read, nothing changed.
  function meta_reset()
    META, MDIRTY, MPDIRTY, UNMARKED = nil, {}, false, false
    DEFERRED, FIELDS_WANTED, FIELDC = {}, {}, {}
  end

  -- Asks the meta read to bring a field of the state hash along (only before
  -- the first meta field is read; later, the field is read when needed).
  function prefetch_field(field)
    if not META then FIELDS_WANTED[#FIELDS_WANTED + 1] = field end
  end

  -- A queue's record and open chunk, and its sealed head chunk too when the
  -- call will read items (items.lua).
  function prefetch(qid, with_head)
    prefetch_field(qid)
    prefetch_field(qid .. ':t')
    if with_head then prefetch_field(qid .. ':h') end
  end

  -- (Defined before meta(), which reads the fields in: a call may set a
  -- field before reading any, and adopt_older_meta sets them as it reads.)
  -- (meta: declared above)

  function mset(field, value)
    local m = META or meta()
    if IS_PACKED[field] then
      m[field] = tonumber(value)
      MPDIRTY = true
    else
      m[field] = value
      MDIRTY[field] = true
    end
  end

  -- Key-schema 1 and 2 kept the meta fields in a hash of their own and the
  -- leases in another. Their fields are taken over here (a bounded move: the
  -- meta hash has a couple of dozen fields); the leases stay where they are
  -- until each ends (leases.lua, 'oldleases'). The first write then leaves
  -- the old meta hash holding only v = 4, so older scripts refuse the arena.
  local function adopt_older_meta()
    UNMARKED = true
    local old = rcall('HGETALL', K_OLD_META)
    local fields = {}
    for i = 1, #old, 2 do fields[old[i]] = old[i + 1] end
    local v = fields.v
    -- (3: the mark version 3 left once it had taken on a 1 or a 2: nothing left to move.)
    if v == nil or v == SCHEMA_VERSION or v == '3' then return end
    if not TAKEN_ON[v] then
      raise('WEIR_SCHEMA', 'arena was written with key-schema version ' .. v .. ', these scripts use ' .. SCHEMA_VERSION)
    end
    for f, value in pairs(fields) do
      -- (A field written since, by a client of this version, stays: shards.)
      if IS_PACKED[f] then
        mset(f, tonumber(value) or 0)
      elseif META[f] == nil then
        mset(f, value)
      end
    end
    if rcall('EXISTS', K_OLD_LEASES) == 1 then mset('oldleases', '1') end
  end

  -- The meta fields and the fields asked for (prefetch) with one HMGET; the
  -- packed numbers unpacked straight into one table made at its full size
  -- (every call does this: no loop, no table grown key by key).
  function meta()
    if META then return META end
    local v = rcall('HMGET', K_STATE, 'm', 'v', 'held', 'maxAttempts', 'dedupeBits', 'dedupeHashes', 'dedupeSpan', 'dedupeSet', 'shards', 'oldleases', unpack(FIELDS_WANTED))
    local turn, gap, lastserve, queued, leased, delayed, done, dead, expired, enqueued, qseq, reapat, delayat, schedat = 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
    if v[1] then
      turn, gap, lastserve, queued, leased, delayed, done, dead, expired, enqueued, qseq, reapat, delayat, schedat = sunpack(MPACK_FMT, v[1])
    end
    -- (`or nil`: a field absent from the reply is false there, nil here.)
    META = {
      turn = turn, gap = gap, lastserve = lastserve, queued = queued, leased = leased, delayed = delayed, done = done,
      dead = dead, expired = expired, enqueued = enqueued, qseq = qseq, reapat = reapat, delayat = delayat, schedat = schedat,
      v = v[2] or nil, held = v[3] or nil, maxAttempts = v[4] or nil, dedupeBits = v[5] or nil, dedupeHashes = v[6] or nil,
      dedupeSpan = v[7] or nil, dedupeSet = v[8] or nil, shards = v[9] or nil, oldleases = v[10] or nil,
    }
    local wanted = FIELDS_WANTED
    for j = 1, #wanted do FIELDC[wanted[j]] = v[10 + j] end
    if not META.v then adopt_older_meta() end
    return META
  end

  -- A meta field's value: a number for the packed ones (0 when never set),
  -- else a string, or nil when the arena has none.
  function mget(field)
    return (META or meta())[field]
  end

  function mincr(field, by)
    local m = META or meta()
    if IS_PACKED[field] then
      local n = m[field] + by
      m[field] = n
      MPDIRTY = true
      return n
    end
    local n = tonumber(m[field] or '0') + by
    mset(field, fmt(n))
    return n
  end

  -- A meta field removed, at once.
  function mdel(field)
    meta()[field] = nil
    MDIRTY[field] = nil
    rcall('HDEL', K_STATE, field)
  end

  -- A field of the state hash written with the call's HSET.
  function defer_hset(field, value)
    DEFERRED[field] = value
  end

  -- A field of the state hash deleted with the call's writes (one HDEL for
  -- all: arena.lua flush); a later defer_hset of it in the call stands.
  function defer_hdel(field)
    DEFERRED[field] = false
  end

  -- The changed meta fields as field/value pairs, appended to `args`. A call
  -- that writes anything marks the arena with this version (and, the first
  -- time, the old meta hash too: see adopt_older_meta).
  function flush_meta(args)
    if not META or (not MPDIRTY and next(MDIRTY) == nil and #args == 0) then return args end
    local m = META
    if m.v ~= SCHEMA_VERSION then mset('v', SCHEMA_VERSION) end
    if UNMARKED then
      rcall('DEL', K_OLD_META)
      rcall('HSET', K_OLD_META, 'v', SCHEMA_VERSION)
      UNMARKED = false
    end
    for f in pairs(MDIRTY) do
      args[#args + 1] = f
      args[#args + 1] = m[f]
      MDIRTY[f] = nil
    end
    if MPDIRTY then
      args[#args + 1] = 'm'
      args[#args + 1] = spack(MPACK_FMT, m.turn, m.gap, m.lastserve, m.queued, m.leased, m.delayed, m.done, m.dead, m.expired, m.enqueued, m.qseq, m.reapat, m.delayat, m.schedat)
      MPDIRTY = false
    end
    return args
  end

  -- Lowers a bound field to `at` (µs).
  -- (0: never set, as in an arena written before the bounds: "look".)
  function lower_bound(field, at)
    local b = mget(field)
    if b == 0 or at < b then mset(field, at) end
  end

  -- Whether a lookup bounded by `field` may find something due at `now`.
  function bound_passed(field, now)
    return (META or meta())[field] <= now
  end

  -- The earliest score in a sorted set, or nil when it is empty (or holds
  -- only a keeper at +inf: leases.lua LEXP_KEEPER).
  function earliest(zkey)
    local r = rcall('ZRANGE', zkey, '0', '0', 'WITHSCORES')
    if r[2] and r[2] ~= 'inf' then return tonumber(r[2]) end
    return nil
  end

  -- After a lookup: the bound is the set's earliest score again (NEVER when empty).
  function reset_bound(field, zkey)
    mset(field, earliest(zkey) or NEVER)
  end

  function ensure_schema()
    local v = mget('v')
    -- (Versions 1 to 3 are taken on as they are used: adopt_older_meta, items.lua.)
    if v and v ~= SCHEMA_VERSION and not TAKEN_ON[v] then
      raise('WEIR_SCHEMA', 'arena was written with key-schema version ' .. v .. ', these scripts use ' .. SCHEMA_VERSION)
    end
    return v
  end

  -- A script that places queues (enqueue, setLimits) is told the caller's
  -- shard count of the arena: a caller with another count (a stale or missing
  -- layout: src/queue/layouts.ts) would put a queue in the wrong shard, so it
  -- is refused, and re-reads the layout. A shard without the field is the one
  -- shard of an arena without a layout.
  function check_shards(arg_index)
    local expected = int_arg(arg_index, 'shards', 1, MAX_SHARDS)
    local have = tonumber(mget('shards') or '1')
    if have ~= expected then
      raise('WEIR_SHARDS_CHANGED', 'the arena has ' .. fmt(have) .. ' shards, the caller thought ' .. expected)
    end
  end

  function max_attempts()
    return tonumber(mget('maxAttempts') or DEFAULT_MAX_ATTEMPTS)
  end
end
