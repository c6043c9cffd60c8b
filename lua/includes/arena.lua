--[[
  Shared by every queue script (inlined by src/queue/scripts.ts where a script
  says `--@include "arena"`).

  The arena key block. Every script receives the same 13 keys, in this order,
  all built by the client (src/queue/keys.ts) and all sharing the hash tag
  `{arena}`, so every script runs unchanged on Redis Cluster:

    KEYS[1]  meta      hash    arena counters and settings (see below)
    KEYS[2]  queues    hash    per-queue state, field "<qid>:<attr>"
    KEYS[3]  qids      hash    queue name -> qid
    KEYS[4]  items     hash    a queue's items: chunks "<qid>:<n>" and front entries "<qid>:f<k>" (see below)
    KEYS[5]  ready     zset    qid -> turn number: eligible queues, round-robin order
    KEYS[6]  sched     zset    qid -> µs when it becomes eligible (rate or pause)
    KEYS[7]  leases    hash    token -> "<qid>:<attempt>:<expiry µs>:<item>"
    KEYS[8]  lexp      zset    token -> µs when the lease expires
    KEYS[9]  delayed   zset    token -> µs when a retried item is due
    KEYS[10] delaydata hash    token -> "<qid>:<attempts>:<reasonlen>:<reason><item>"
    KEYS[11] dead      list    JSON records {queue, item, reason, attempts, at}
    KEYS[12] wake      list    at most one token: "there may be work now"
    KEYS[13] dedupe    string  the dedupe bitmap

  Items. A queue is its front stack, then its chunks, oldest first:
  - chunks "<qid>:<n>", n = hc..tc: items appended at the tail, each as a
    4-byte big-endian length and the bytes, packed up to CHUNK_BYTES per
    chunk. A dequeue reads at the head chunk's offset `ho` without rewriting
    it; a chunk is deleted once read through. Packing keeps Redis's
    per-entry overhead (~60 bytes for a hash field of its own) off each item.
  - front entries "<qid>:f<k>", k = 1..fn: items put back at the head
    (lease expired, released, retried), a stack, so the last one put back is
    served next; each is struct '>I4I4' (attempts, reason length), the
    reason, then the item. Items in chunks have no attempts yet.

  meta fields: v (key-schema version), qseq (last qid), turn (round-robin
  counter), queued, leased, delayed, done, dead, expired, maxAttempts, held,
  dedupeBits, dedupeHashes.

  Per-queue record: field "<qid>" of `queues` is struct.pack('<d' x 14) of
  the numbers below, followed by the queue's name (one read and one write
  per queue per call, however many attributes change); field "<qid>:rate"
  keeps the rate as configured, for stats.
    q     queued                  l     leased
    hc    head chunk number       ho    byte offset of the next item in it
    tc    tail chunk number       tn    items in the tail chunk
    tb    bytes in the tail chunk fn    items in the front stack
    nx    µs before which it may not be served (rate)
    c     carried fraction of a µs of the interval
    cap   max in flight (0 = no cap)
    p     paused until µs         iv    interval between serves, µs (0 = unlimited)
    hold  1 when held             d     delayed (retry timers)
    done  committed               dead  dead-lettered (now in the dead letter)
    cl    µs until which its next slot is promised to a waiting caller

  Time is Redis TIME in integer microseconds (exact in a Lua double until
  2255). Numbers are written with string.format('%.0f'), never tostring,
  which would round them to 14 significant digits.
]]

local K_META, K_QUEUES, K_QIDS, K_ITEMS = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local K_READY, K_SCHED, K_LEASES, K_LEXP = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local K_DELAYED, K_DELAYDATA, K_DEAD = KEYS[9], KEYS[10], KEYS[11]
local K_WAKE, K_DEDUPE = KEYS[12], KEYS[13]

local SCHEMA_VERSION = '1'
local DEFAULT_MAX_ATTEMPTS = 5
local MAX_ITEM_BYTES = 65536
local MAX_NAME_BYTES = 256
local MAX_REASON_BYTES = 1024
-- Bounds on the work one call may do, so no script can block Redis for long.
local REAP_BATCH = 100
local PROMOTE_BATCH = 100
local POP_TRIES = 16
-- A chunk is closed before it would pass this many bytes (so it stays within
-- jemalloc's 2 KiB size class) or hold this many items. Smaller chunks cost
-- an enqueue less to rewrite; larger ones save a little memory.
local CHUNK_BYTES = 2040
local CHUNK_ITEMS = 128

if #KEYS ~= 13 then
  return redis.error_reply('WEIR_BAD_ARGS expected the 13-key arena block, got ' .. #KEYS)
end

local function fail(code, msg)
  -- error() aborts the script; nothing written so far by a script that
  -- validates before writing, which every script here does.
  error({ err = code .. ' ' .. msg })
end

local function fmt(n)
  return string.format('%.0f', n)
end

local function now_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

local function int_arg(i, name, min, max)
  local v = tonumber(ARGV[i])
  if v == nil or v ~= v or v % 1 ~= 0 or v < min or v > max then
    fail('WEIR_BAD_ARGS', name .. ' must be an integer in [' .. fmt(min) .. ', ' .. fmt(max) .. '], got ' .. tostring(ARGV[i]))
  end
  return v
end

local function str_arg(i, name, maxlen, allow_empty)
  local v = ARGV[i]
  if type(v) ~= 'string' then fail('WEIR_BAD_ARGS', name .. ' is missing') end
  if (not allow_empty) and #v == 0 then fail('WEIR_BAD_ARGS', name .. ' must not be empty') end
  if #v > maxlen then fail('WEIR_BAD_ARGS', name .. ' is longer than ' .. maxlen .. ' bytes') end
  return v
end

local function argc(n, usage)
  if #ARGV ~= n then fail('WEIR_BAD_ARGS', 'expected ' .. n .. ' arguments (' .. usage .. '), got ' .. #ARGV) end
end

local function mincr(field, by) return redis.call('HINCRBY', K_META, field, by) end

local QFIELDS = { 'q', 'l', 'hc', 'ho', 'tc', 'tn', 'tb', 'fn', 'nx', 'c', 'cap', 'p', 'iv', 'hold', 'd', 'done', 'dead', 'cl' }
local QFMT = '<dddddddddddddddddd'
local QFIXED = 18 * 8

-- Queue records are read once per call into this cache, changed in place,
-- and written back by qflush(), which every script calls before it returns.
local QCACHE = {}
local QDIRTY = {}
-- Chunks read or being written in this call: the head chunk per queue
-- ({n, data}) and the open tail chunk per queue ({n, parts}).
local HEADC = {}
local TAILC = {}

local function qnew(name)
  local st = { name = name }
  for _, k in ipairs(QFIELDS) do st[k] = 0 end
  return st
end

local function qstate(qid)
  local st = QCACHE[qid]
  if st then return st end
  local rec = redis.call('HGET', K_QUEUES, qid)
  if not rec then
    fail('WEIR_BAD_ARGS', 'queue id ' .. tostring(qid) .. ' has no record')
  end
  local v = { struct.unpack(QFMT, rec) }
  st = { name = string.sub(rec, QFIXED + 1) }
  for i, k in ipairs(QFIELDS) do st[k] = v[i] end
  QCACHE[qid] = st
  return st
end

local function qdirty(qid, st)
  QCACHE[qid] = st
  QDIRTY[qid] = true
end

local function qflush()
  for qid, tail in pairs(TAILC) do
    if tail.dirty then
      redis.call('HSET', K_ITEMS, qid .. ':' .. fmt(tail.n), table.concat(tail.parts))
      tail.dirty = false
    end
  end
  for qid in pairs(QDIRTY) do
    local st = QCACHE[qid]
    redis.call('HSET', K_QUEUES, qid, struct.pack(QFMT, st.q, st.l, st.hc, st.ho, st.tc, st.tn, st.tb, st.fn, st.nx,
      st.c, st.cap, st.p, st.iv, st.hold, st.d, st.done, st.dead, st.cl) .. st.name)
  end
  QDIRTY = {}
end

local function qid_of(name)
  return redis.call('HGET', K_QIDS, name)
end

local function max_attempts()
  return tonumber(redis.call('HGET', K_META, 'maxAttempts') or DEFAULT_MAX_ATTEMPTS)
end

-- One wake token at most: an idle worker blocked on `wake` learns there may
-- be work; a stale token costs one empty dequeue, never a lost item.
local function signal()
  if redis.call('LLEN', K_WAKE) == 0 then
    redis.call('RPUSH', K_WAKE, '1')
  end
end

local function earliest(zkey)
  local r = redis.call('ZRANGE', zkey, 0, 0, 'WITHSCORES')
  if r[2] then return tonumber(r[2]) end
  return nil
end

-- Puts a queue where it belongs: `ready` if it may be served now, `sched` at
-- the time it may be, or in neither (parked) when it is empty, held or at its
-- in-flight cap. Every change to those inputs calls this, so the two sets
-- stay exact and dequeue never has to scan for work. Returns true when the
-- change may let an idle worker do something sooner (so callers signal).
local function activate(qid, now)
  local st = qstate(qid)
  if st.q <= 0 or st.hold == 1 or (st.cap > 0 and st.l >= st.cap) then
    redis.call('ZREM', K_READY, qid)
    redis.call('ZREM', K_SCHED, qid)
    return false
  end
  local at = math.max(st.nx, st.p)
  if at <= now then
    if redis.call('ZSCORE', K_READY, qid) then return false end
    redis.call('ZREM', K_SCHED, qid)
    redis.call('ZADD', K_READY, mincr('turn', 1), qid)
    return true
  end
  redis.call('ZREM', K_READY, qid)
  local first = earliest(K_SCHED)
  local old = redis.call('ZSCORE', K_SCHED, qid)
  redis.call('ZADD', K_SCHED, fmt(at), qid)
  return (first == nil or at < first) and (old == false or tonumber(old) ~= at)
end

-- Appends an item at the tail (it has no attempts yet). The caller keeps
-- the arena's `queued` counter.
local function push_tail(qid, st, item)
  local tail = TAILC[qid]
  if not tail or tail.n ~= st.tc then
    tail = { n = st.tc, parts = {}, dirty = false }
    if st.tn > 0 then tail.parts[1] = redis.call('HGET', K_ITEMS, qid .. ':' .. fmt(st.tc)) end
    TAILC[qid] = tail
  end
  local entry = struct.pack('>I4', #item) .. item
  if st.tn > 0 and (st.tb + #entry > CHUNK_BYTES or st.tn >= CHUNK_ITEMS) then
    -- Close this chunk; the item opens the next.
    if tail.dirty then redis.call('HSET', K_ITEMS, qid .. ':' .. fmt(tail.n), table.concat(tail.parts)) end
    st.tc = st.tc + 1
    st.tn = 0
    st.tb = 0
    tail = { n = st.tc, parts = {}, dirty = false }
    TAILC[qid] = tail
  end
  tail.parts[#tail.parts + 1] = entry
  tail.dirty = true
  st.tn = st.tn + 1
  st.tb = st.tb + #entry
  st.q = st.q + 1
  qdirty(qid, st)
end

-- Puts an item back at the head with what it has been through.
local function push_front(qid, st, item, attempts, reason)
  st.fn = st.fn + 1
  redis.call('HSET', K_ITEMS, qid .. ':f' .. fmt(st.fn), struct.pack('>I4I4', attempts, #reason) .. reason .. item)
  st.q = st.q + 1
  qdirty(qid, st)
  mincr('queued', 1)
end

-- Takes the item at the head: the front stack first, then the head chunk.
-- Returns item, attempts so far (nil when the storage was tampered with).
local function take_head(qid, st)
  if st.fn > 0 then
    local field = qid .. ':f' .. fmt(st.fn)
    local v = redis.call('HGET', K_ITEMS, field)
    redis.call('HDEL', K_ITEMS, field)
    st.fn = st.fn - 1
    st.q = st.q - 1
    qdirty(qid, st)
    if not v then return nil, 0 end
    local attempts, rlen = struct.unpack('>I4I4', v)
    return string.sub(v, 9 + rlen), attempts
  end
  local head = HEADC[qid]
  if not head or head.n ~= st.hc then
    local data
    local tail = TAILC[qid]
    if tail and tail.n == st.hc and tail.dirty then
      data = table.concat(tail.parts)
    else
      data = redis.call('HGET', K_ITEMS, qid .. ':' .. fmt(st.hc))
    end
    head = { n = st.hc, data = data or '' }
    HEADC[qid] = head
  end
  st.q = st.q - 1
  qdirty(qid, st)
  local data = head.data
  if st.ho + 4 > #data then return nil, 0 end
  local len = struct.unpack('>I4', data, st.ho + 1)
  local item = string.sub(data, st.ho + 5, st.ho + 4 + len)
  st.ho = st.ho + 4 + len
  if st.ho >= #data and (st.hc < st.tc or st.q - st.fn <= 0) then
    -- Read through: delete it. If it was also the open tail chunk, the
    -- queue's chunks are empty now, so the next append opens a fresh one.
    redis.call('HDEL', K_ITEMS, qid .. ':' .. fmt(st.hc))
    if st.hc == st.tc then
      st.tc = st.tc + 1
      st.tn = 0
      st.tb = 0
      TAILC[qid] = nil
    end
    st.hc = st.hc + 1
    st.ho = 0
    HEADC[qid] = nil
  end
  return item, 0
end

local function to_dead(qid, item, attempts, reason, now)
  local st = qstate(qid)
  local rec = cjson.encode({ queue = st.name, item = item, reason = reason, attempts = attempts, at = math.floor(now / 1000) })
  redis.call('RPUSH', K_DEAD, rec)
  st.dead = st.dead + 1
  qdirty(qid, st)
  mincr('dead', 1)
end

-- Where an item goes when its lease ends without a commit.
-- attempts: deliveries that count against maxAttempts so far.
local function requeue(token, qid, item, attempts, reason, delay_us, now)
  if attempts >= max_attempts() then
    to_dead(qid, item, attempts, reason, now)
  elseif delay_us > 0 then
    redis.call('ZADD', K_DELAYED, fmt(now + delay_us), token)
    redis.call('HSET', K_DELAYDATA, token, qid .. ':' .. fmt(attempts) .. ':' .. #reason .. ':' .. reason .. item)
    local st = qstate(qid)
    st.d = st.d + 1
    qdirty(qid, st)
    mincr('delayed', 1)
  else
    push_front(qid, qstate(qid), item, attempts, reason)
  end
end

-- A lease record is "<qid>:<attempt>:<expiry µs>:<item>": the expiry is kept
-- in the record too (besides `lexp`, which orders expiries), so ending a
-- lease reads one field.
local function lease_record(qid, attempt, expires_s, item)
  return qid .. ':' .. attempt .. ':' .. expires_s .. ':' .. item
end

local function parse_lease(rec)
  local a = string.find(rec, ':', 1, true)
  local b = string.find(rec, ':', a + 1, true)
  local c = string.find(rec, ':', b + 1, true)
  return string.sub(rec, 1, a - 1), tonumber(string.sub(rec, a + 1, b - 1)), string.sub(rec, c + 1), tonumber(string.sub(rec, b + 1, c - 1))
end

-- Ends a lease record (the caller decides where the item goes).
local function drop_lease(token, qid)
  redis.call('HDEL', K_LEASES, token)
  redis.call('ZREM', K_LEXP, token)
  local st = qstate(qid)
  st.l = st.l - 1
  qdirty(qid, st)
  mincr('leased', -1)
end

-- An expired lease: the item goes back to the head of its queue and the
-- delivery counts as an attempt.
local function expire_lease(token, rec, now)
  local qid, attempt, item = parse_lease(rec)
  drop_lease(token, qid)
  mincr('expired', 1)
  requeue(token, qid, item, attempt, 'lease expired', 0, now)
  return activate(qid, now)
end

local function reap_expired(now, limit)
  local woke = false
  local expired = redis.call('ZRANGEBYSCORE', K_LEXP, '-inf', fmt(now), 'LIMIT', 0, limit)
  for _, token in ipairs(expired) do
    local rec = redis.call('HGET', K_LEASES, token)
    if rec then
      if expire_lease(token, rec, now) then woke = true end
    else
      redis.call('ZREM', K_LEXP, token)
    end
  end
  return woke
end

-- Looks a lease up for commit/extend/release/retry/fail. A lease is current
-- while its record exists and its expiry has not passed; an expired one is
-- expired here and then (so it goes back exactly once) and reported stale.
local function current_lease(token, now)
  local rec = redis.call('HGET', K_LEASES, token)
  if not rec then return nil end
  local _, _, _, exp = parse_lease(rec)
  if exp <= now then
    if expire_lease(token, rec, now) then signal() end
    return nil
  end
  return rec
end

-- Ends the caller's lease for release/retry/fail: qid, attempt, item, or nil
-- when the lease is stale (the caller then flushes and answers 0).
local function end_lease(token, now)
  local rec = current_lease(token, now)
  if not rec then return nil end
  local qid, attempt, item = parse_lease(rec)
  drop_lease(token, qid)
  return qid, attempt, item
end

-- Every writing script ends here: queue records written back, idle workers woken if useful.
local function finish(woke, result)
  qflush()
  if woke then signal() end
  return result
end

local function ensure_schema()
  local v = redis.call('HGET', K_META, 'v')
  if v and v ~= SCHEMA_VERSION then
    fail('WEIR_SCHEMA', 'arena was written with key-schema version ' .. v .. ', these scripts use ' .. SCHEMA_VERSION)
  end
  return v
end
