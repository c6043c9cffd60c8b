--[[
  dequeue: lease up to `count` items by the arena's fair, rate-limited schedule.

  KEYS: the arena key block (lua/includes/arena.lua).
  ARGV[1]  lease token base chosen by the client (8..48 bytes, random); lease i
           of this call gets the token "<base>.<i>"
  ARGV[2]  lease duration in ms (1..86400000)
  ARGV[3]  '1' when the caller was woken by the wake list (it then passes the
           wake-up on if more work is ready), else '0'
  ARGV[4]  count: most leases to hand out (1..1000)

  Each call first does a bounded amount of upkeep, all on Redis time:
  expired leases go back to the head of their queue (counting an attempt),
  retried items whose delay is over go back to the head of theirs, and
  queues whose next allowed time has come join the tail of the round-robin
  order. Then it serves queues from the head of that order, one item per
  turn; a queue served goes back to the tail, or to `sched` at its next
  allowed time, so a batch is as fair and as polite as single calls.

  Returns {waitUs, lease, lease, ...}, each lease {token, queue, item,
  attempt, expiresAtMs, servedAtUs}. waitUs tells the caller when its next
  call may find work: 0 when more is ready now, else how long until
  something may become ready (a rate slot, a retry, a lease expiry), or -1
  when nothing will without a new enqueue/commit/unhold (block on the wake
  list then). Empty callers are spread over the upcoming rate slots: each
  gets the earliest slot no other waiting caller was told of (a claim that
  lapses a few ms after the slot), so N idle workers do not all wake for one
  slot. Claims only decide wake-up times, never who may take work.
  Errors: WEIR_BAD_ARGS, WEIR_SCHEMA.
]]
--@include "arena"

-- How many upcoming slots an empty caller may look through for an unclaimed one,
-- and how long after its slot a claim lapses (a claimant that died).
local CLAIM_SCAN = 16
local CLAIM_GRACE_US = 5000

argc(4, 'token leaseMs woken count')
local base = str_arg(1, 'token', 48, false)
if #base < 8 then fail('WEIR_BAD_ARGS', 'token must be at least 8 bytes') end
local lease_ms = int_arg(2, 'leaseMs', 1, 86400000)
local woken = ARGV[3] == '1'
local count = int_arg(4, 'count', 1, 1000)
ensure_schema()
if redis.call('HEXISTS', K_LEASES, base .. '.1') == 1 then fail('WEIR_BAD_ARGS', 'lease token is already in use') end

local now = now_us()
reap_expired(now, REAP_BATCH)

-- Retries whose delay is over.
local due = redis.call('ZRANGEBYSCORE', K_DELAYED, '-inf', fmt(now), 'LIMIT', 0, PROMOTE_BATCH)
for _, t in ipairs(due) do
  local rec = redis.call('HGET', K_DELAYDATA, t)
  redis.call('ZREM', K_DELAYED, t)
  redis.call('HDEL', K_DELAYDATA, t)
  if rec then
    local a = string.find(rec, ':', 1, true)
    local b = string.find(rec, ':', a + 1, true)
    local c = string.find(rec, ':', b + 1, true)
    local qid = string.sub(rec, 1, a - 1)
    local attempts = tonumber(string.sub(rec, a + 1, b - 1))
    local rlen = tonumber(string.sub(rec, b + 1, c - 1))
    local reason = string.sub(rec, c + 1, c + rlen)
    local item = string.sub(rec, c + rlen + 1)
    local st = qstate(qid)
    st.d = st.d - 1
    qdirty(qid, st)
    mincr('delayed', -1)
    push_front(qid, qstate(qid), item, attempts, reason)
    activate(qid, now)
  end
end

-- Queues whose time has come join the round-robin order, earliest first.
local sched = redis.call('ZRANGEBYSCORE', K_SCHED, '-inf', fmt(now), 'LIMIT', 0, PROMOTE_BATCH)
for _, qid in ipairs(sched) do
  redis.call('ZREM', K_SCHED, qid)
  redis.call('ZADD', K_READY, mincr('turn', 1), qid)
end

local function wait_reply()
  if redis.call('HGET', K_META, 'held') == '1' then return { -1 } end
  local w = nil
  for _, z in ipairs({ K_DELAYED, K_LEXP }) do
    local e = earliest(z)
    if e and (w == nil or e < w) then w = e end
  end
  -- The earliest rate slot no other waiting caller has claimed.
  local slots = redis.call('ZRANGE', K_SCHED, 0, CLAIM_SCAN - 1, 'WITHSCORES')
  local found = false
  for i = 1, #slots, 2 do
    local qid, at = slots[i], tonumber(slots[i + 1])
    if w ~= nil and w <= at then
      found = true
      break
    end
    local st = qstate(qid)
    if st.cl < at then
      st.cl = at + CLAIM_GRACE_US
      qdirty(qid, st)
      w = at
      found = true
      break
    end
  end
  if not found and slots[1] then
    -- Every upcoming slot looked at is someone's: come back when the first
    -- of them has been served and its queue has its next slot.
    local again = tonumber(slots[2]) + math.max(qstate(slots[1]).iv, 1000)
    if w == nil or again < w then w = again end
  end
  if w == nil then return { -1 } end
  return { math.max(0, w - now) }
end

if redis.call('HGET', K_META, 'held') == '1' then
  local r = wait_reply()
  qflush()
  return r
end

-- Serve. Queue records are cached for the call (a batch may serve one
-- queue many times) and written once by qflush(); arena counters and the
-- turn counter are summed here and written once too.
local leases = { 0 }
local served = 0
local turn = tonumber(redis.call('HGET', K_META, 'turn') or '0')
local expires = now + lease_ms * 1000
local expires_s = fmt(expires)
local expires_ms = fmt(math.floor(expires / 1000))
local now_s = fmt(now)
local taken = 0
for _ = 1, count + POP_TRIES do
  if served >= count then break end
  local top = redis.call('ZPOPMIN', K_READY)
  local qid = top[1]
  if not qid then break end
  local st = qstate(qid)
  if st.q > 0 and st.hold ~= 1 and (st.cap == 0 or st.l < st.cap) and math.max(st.nx, st.p) <= now then
    local item, attempts = take_head(qid, st)
    st.cl = 0
    taken = taken + 1
    if item then
      local attempt = attempts + 1
      served = served + 1
      st.l = st.l + 1
      local token = base .. '.' .. served
      redis.call('HSET', K_LEASES, token, lease_record(qid, attempt, expires_s, item))
      redis.call('ZADD', K_LEXP, expires_s, token)
      -- Politeness: the next serve of this queue is one interval after this
      -- one; the interval's fraction of a µs is carried to the next.
      if st.iv > 0 then
        local whole = math.floor(st.iv)
        st.c = st.c + (st.iv - whole)
        if st.c >= 1 then
          whole = whole + 1
          st.c = st.c - 1
        end
        st.nx = now + whole
      end
      leases[#leases + 1] = { token, st.name, item, attempt, expires_ms, now_s }
    end
    -- (A missing item only follows outside tampering: it is skipped, counts kept right.)
    -- Back into the schedule: the tail of the round-robin, or `sched` at its next time.
    if st.q > 0 and (st.cap == 0 or st.l < st.cap) then
      local at = math.max(st.nx, st.p)
      if at <= now then
        turn = turn + 1
        redis.call('ZADD', K_READY, turn, qid)
      else
        redis.call('ZADD', K_SCHED, fmt(at), qid)
      end
    end
  else
    -- Not servable after all: let activate() place it, handing it the turn
    -- counter it numbers with.
    redis.call('HSET', K_META, 'turn', turn)
    activate(qid, now)
    turn = tonumber(redis.call('HGET', K_META, 'turn') or '0')
  end
end
if taken > 0 then
  redis.call('HSET', K_META, 'turn', turn)
  redis.call('HINCRBY', K_META, 'queued', -taken)
  redis.call('HINCRBY', K_META, 'leased', served)
end
if served == 0 then
  local r = wait_reply()
  qflush()
  return r
end
-- Tell the caller when to come back for more: now if a ready queue is not
-- already promised to a waiting caller, else its own upcoming slot, so a
-- worker need not spend an empty call to learn it.
local ready = redis.call('ZRANGE', K_READY, 0, CLAIM_SCAN - 1)
local unclaimed = #ready >= CLAIM_SCAN
for _, qid in ipairs(ready) do
  if qstate(qid).cl <= now then
    unclaimed = true
    break
  end
end
if unclaimed then
  if woken then signal() end
else
  leases[1] = wait_reply()[1]
end
qflush()
return leases
