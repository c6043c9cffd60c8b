--[[
  Shared by every queue script (inlined by src/queue/scripts.ts where a script
  says `--@include "arena"`).

  The arena key block. Every script receives the same 14 keys, in this order,
  all built by the client (src/queue/keys.ts) and all sharing the hash tag
  `{arena}`, so every script runs unchanged on Redis Cluster:

    KEYS[1]  meta      hash    arena counters and settings (see below)
    KEYS[2]  queues    hash    per-queue state, field "<qid>:<attr>"
    KEYS[3]  qids      hash    queue name -> qid
    KEYS[4]  items     hash    "<qid>:<seq>" -> item (a queue is seq head..tail-1)
    KEYS[5]  ready     zset    qid -> turn number: eligible queues, round-robin order
    KEYS[6]  sched     zset    qid -> µs when it becomes eligible (rate or pause)
    KEYS[7]  leases    hash    token -> "<qid>:<attempt>:<expiry µs>:<item>"
    KEYS[8]  lexp      zset    token -> µs when the lease expires
    KEYS[9]  delayed   zset    token -> µs when a retried item is due
    KEYS[10] delaydata hash    token -> "<qid>:<attempts>:<reasonlen>:<reason><item>"
    KEYS[11] retries   hash    "<qid>:<seq>" -> "<attempts>:<last reason>" (only items that came back)
    KEYS[12] dead      list    JSON records {queue, item, reason, attempts, at}
    KEYS[13] wake      list    at most one token: "there may be work now"
    KEYS[14] dedupe    string  the dedupe bitmap

  meta fields: v (key-schema version), qseq (last qid), turn (round-robin
  counter), queued, leased, delayed, done, dead, maxAttempts, held,
  dedupeBits, dedupeHashes.

  Per-queue attributes (field "<qid>:<attr>" of `queues`):
    name  queue name              iv    interval between serves, µs (0 = unlimited)
    rate  rate as configured      cap   max in flight (0 = no cap)
    h     head seq                t     tail seq (next free)
    q     queued                  l     leased
    d     delayed (retry timers)  nx    µs before which it may not be served
    c     carried fraction of µs  p     paused until µs
    hold  "1" when held           done  committed   dead  dead-lettered

  Time is Redis TIME in integer microseconds (exact in a Lua double until
  2255). Numbers are written with string.format('%.0f'), never tostring,
  which would round them to 14 significant digits.
]]

local K_META, K_QUEUES, K_QIDS, K_ITEMS = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local K_READY, K_SCHED, K_LEASES, K_LEXP = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local K_DELAYED, K_DELAYDATA, K_RETRIES, K_DEAD = KEYS[9], KEYS[10], KEYS[11], KEYS[12]
local K_WAKE, K_DEDUPE = KEYS[13], KEYS[14]

local SCHEMA_VERSION = '1'
local DEFAULT_MAX_ATTEMPTS = 5
local MAX_ITEM_BYTES = 65536
local MAX_NAME_BYTES = 256
local MAX_REASON_BYTES = 1024
-- Bounds on the work one call may do, so no script can block Redis for long.
local REAP_BATCH = 100
local PROMOTE_BATCH = 100
local POP_TRIES = 16

if #KEYS ~= 14 then
  return redis.error_reply('WEIR_BAD_ARGS expected the 14-key arena block, got ' .. #KEYS)
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

local function qf(qid, attr) return qid .. ':' .. attr end
local function qget(qid, attr) return redis.call('HGET', K_QUEUES, qf(qid, attr)) end
local function qnum(qid, attr) return tonumber(redis.call('HGET', K_QUEUES, qf(qid, attr)) or '0') end
local function qset(qid, attr, v) redis.call('HSET', K_QUEUES, qf(qid, attr), v) end
local function qincr(qid, attr, by) return redis.call('HINCRBY', K_QUEUES, qf(qid, attr), by) end
local function mincr(field, by) return redis.call('HINCRBY', K_META, field, by) end

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
  local f = redis.call('HMGET', K_QUEUES, qf(qid, 'q'), qf(qid, 'l'), qf(qid, 'cap'), qf(qid, 'nx'), qf(qid, 'p'), qf(qid, 'hold'))
  local queued, leased, cap = tonumber(f[1] or '0'), tonumber(f[2] or '0'), tonumber(f[3] or '0')
  if queued <= 0 or f[6] == '1' or (cap > 0 and leased >= cap) then
    redis.call('ZREM', K_READY, qid)
    redis.call('ZREM', K_SCHED, qid)
    return false
  end
  local at = math.max(tonumber(f[4] or '0'), tonumber(f[5] or '0'))
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

local function push_item(qid, item, attempts, reason, at_head)
  local seq
  if at_head then
    seq = qincr(qid, 'h', -1)
  else
    seq = qincr(qid, 't', 1) - 1
  end
  local field = qid .. ':' .. fmt(seq)
  redis.call('HSET', K_ITEMS, field, item)
  if attempts > 0 or reason ~= '' then
    redis.call('HSET', K_RETRIES, field, fmt(attempts) .. ':' .. reason)
  end
  qincr(qid, 'q', 1)
  mincr('queued', 1)
end

local function to_dead(qid, item, attempts, reason, now)
  local rec = cjson.encode({ queue = qget(qid, 'name'), item = item, reason = reason, attempts = attempts, at = math.floor(now / 1000) })
  redis.call('RPUSH', K_DEAD, rec)
  qincr(qid, 'dead', 1)
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
    qincr(qid, 'd', 1)
    mincr('delayed', 1)
  else
    push_item(qid, item, attempts, reason, true)
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
  qincr(qid, 'l', -1)
  mincr('leased', -1)
end

-- An expired lease: the item goes back to the head of its queue and the
-- delivery counts as an attempt.
local function expire_lease(token, rec, now)
  local qid, attempt, item = parse_lease(rec)
  drop_lease(token, qid)
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

local function ensure_schema()
  local v = redis.call('HGET', K_META, 'v')
  if v and v ~= SCHEMA_VERSION then
    fail('WEIR_SCHEMA', 'arena was written with key-schema version ' .. v .. ', these scripts use ' .. SCHEMA_VERSION)
  end
  return v
end
