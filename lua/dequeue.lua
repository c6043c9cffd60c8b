--[[
  dequeue: lease up to `count` items by the arena's fair, rate-limited schedule.

  KEYS: the arena key block (lua/includes/arena.lua).
  ARGV[1]  lease token base chosen by the client (8..48 bytes, random); lease i
           of this call gets the token "<base>.<i>"; a base already used
           replays that call's answer (its leases still held)
  ARGV[2]  lease duration in ms (1..86400000)
  ARGV[3]  '1' when the caller was woken by the wake list (it then passes the
           wake-up on if more work is ready), else '0'
  ARGV[4]  count: most leases to hand out (1..1000)
  ARGV[5]  the queue id this caller was promised by its last reply, or ''

  Each call first does a bounded amount of upkeep, all on Redis time:
  expired leases go back to the head of their queue (counting an attempt),
  retried items whose delay is over go back to the head of theirs, and
  queues whose next allowed time has come join the tail of the round-robin
  order. Then it serves queues from the head of that order, one item per
  turn; a queue served goes back to the tail, or to `sched` at its next
  allowed time, so a batch is as fair and as polite as single calls.

  Returns {{waitUs, promised, nowUs}, lease, lease, ...}, each lease {token,
  queue, item, attempt, expiresAtMs, servedAtUs, intervalUs}; nowUs is
  Redis's clock, intervalUs the queue's interval (0 = unlimited). waitUs tells the caller when its
  next call may find work: 0 when more is ready now, else how long until
  something may become ready (a rate slot, a retry, a lease expiry), or -1
  when nothing will without a new enqueue/commit/unhold (block on the wake
  list then).

  Promises. Idle callers are spread over the upcoming slots instead of all
  waking for the first: each reply promises the caller the earliest ready
  queue or rate slot not yet promised to another caller (`promised`, a queue
  id, which the caller passes back as ARGV[5]). A caller serves its promised
  queue first, and passes over queues promised to others while their promise
  stands (until CLAIM_GRACE_US after the slot, so a caller that died delays
  nobody for long). Promises only decide who goes first among ready queues
  and when callers wake, never the rate: politeness is untouched.
  Errors: WEIR_BAD_ARGS, WEIR_SCHEMA.
]]
--@include "arena"

-- How many upcoming slots an empty caller may look through for an unclaimed one,
-- and how long after its slot a claim lapses (a claimant that died).
local CLAIM_SCAN = 16
local CLAIM_GRACE_US = 20000

argc(5, 'token leaseMs woken count promised')
local base = str_arg(1, 'token', 48, false)
if #base < 8 then fail('WEIR_BAD_ARGS', 'token must be at least 8 bytes') end
local lease_ms = int_arg(2, 'leaseMs', 1, 86400000)
local woken = ARGV[3] == '1'
local count = int_arg(4, 'count', 1, 1000)
local promised = str_arg(5, 'promised', 20, true)
if promised ~= '' and not string.match(promised, '^%d+$') then fail('WEIR_BAD_ARGS', 'promised must be a queue id') end
ensure_schema()

-- The same call again (a client resending after a lost reply, as ioredis
-- does after a reconnect): answer with the leases this token base was given
-- and still holds, instead of serving more. Their serve time is given as
-- now, which only makes a caller that keeps spacing from it wait longer.
if redis.call('HEXISTS', K_LEASES, base .. '.1') == 1 then
  local again = { { 0, '', fmt(now_us()) } }
  for i = 1, count do
    local token = base .. '.' .. i
    local rec = redis.call('HGET', K_LEASES, token)
    if rec then
      local qid, attempt, item, exp = parse_lease(rec)
      local st = qstate(qid)
      again[#again + 1] = { token, st.name, item, attempt, fmt(math.floor(exp / 1000)), fmt(now_us()), string.format('%.3f', st.iv) }
    end
  end
  return again
end

local now = now_us()
local now_s = fmt(now)
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

-- Promises the caller a ready queue or an upcoming slot (see the header).
-- ready_first: look at ready queues first (the caller got work and may
-- come straight back for more).
local function wait_reply(ready_first)
  if redis.call('HGET', K_META, 'held') == '1' then return { -1, '' } end
  -- Ready queues first: one not promised yet is promised now; if all are
  -- promised, come back when the first promise lapses (its holder may be gone).
  local w = nil
  local ready = redis.call('ZRANGE', K_READY, 0, CLAIM_SCAN - 1)
  for _, qid in ipairs(ready) do
    local st = qstate(qid)
    if st.cl <= now then
      if ready_first then
        st.cl = now + CLAIM_GRACE_US
        qdirty(qid, st)
        return { 0, qid }
      end
    elseif w == nil or st.cl < w then
      w = st.cl
    end
  end
  if #ready >= CLAIM_SCAN then return { 0, '' } end
  for _, z in ipairs({ K_DELAYED, K_LEXP }) do
    local e = earliest(z)
    if e and (w == nil or e < w) then w = e end
  end
  -- The earliest rate slot not promised to another caller.
  local slots = redis.call('ZRANGE', K_SCHED, 0, CLAIM_SCAN - 1, 'WITHSCORES')
  for i = 1, #slots, 2 do
    local qid, at = slots[i], tonumber(slots[i + 1])
    if w ~= nil and w <= at then break end
    local st = qstate(qid)
    if st.cl < at then
      st.cl = at + CLAIM_GRACE_US
      qdirty(qid, st)
      return { math.max(0, at - now), qid }
    end
  end
  if slots[1] and #slots >= 2 then
    -- Every upcoming slot looked at is promised: come back when the first of
    -- them has been served and its queue has its next slot.
    local again = tonumber(slots[2]) + math.max(qstate(slots[1]).iv, 1000)
    if w == nil or again < w then w = again end
  end
  if w == nil then return { -1, '' } end
  return { math.max(0, w - now), '' }
end

if redis.call('HGET', K_META, 'held') == '1' then
  local r = wait_reply(false)
  qflush()
  r[3] = now_s
  return { r }
end

-- The next queue to serve: the caller's promised one if it is ready, else
-- the head of the round-robin, passing over (at most CLAIM_SCAN) queues
-- promised to other callers; those keep their place.
local passed = {}
local function next_queue()
  if promised ~= '' then
    local q = promised
    promised = ''
    if redis.call('ZREM', K_READY, q) == 1 then return q end
  end
  for _ = 1, CLAIM_SCAN + 1 do
    local top = redis.call('ZPOPMIN', K_READY)
    if not top[1] then return nil end
    if #passed >= CLAIM_SCAN or qstate(top[1]).cl <= now then return top[1] end
    passed[#passed + 1] = top
  end
  return nil
end

-- Serve. Queue records are cached for the call (a batch may serve one
-- queue many times) and written once by qflush(); arena counters and the
-- turn counter are summed here and written once too.
local leases = { false }
local served = 0
local turn = tonumber(redis.call('HGET', K_META, 'turn') or '0')
local expires = now + lease_ms * 1000
local expires_s = fmt(expires)
local expires_ms = fmt(math.floor(expires / 1000))
local taken = 0
for _ = 1, count + POP_TRIES do
  if served >= count then break end
  local qid = next_queue()
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
      -- (For an unlimited queue nx is the last serve: a later, lower rate starts from it.)
      local whole = math.floor(st.iv)
      st.c = st.c + (st.iv - whole)
      if st.c >= 1 then
        whole = whole + 1
        st.c = st.c - 1
      end
      st.nx = now + whole
      leases[#leases + 1] = { token, st.name, item, attempt, expires_ms, now_s, string.format('%.3f', st.iv) }
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
for _, top in ipairs(passed) do
  redis.call('ZADD', K_READY, top[2], top[1])
end
if taken > 0 then
  redis.call('HSET', K_META, 'turn', turn)
  redis.call('HINCRBY', K_META, 'queued', -taken)
  redis.call('HINCRBY', K_META, 'leased', served)
end
leases[1] = wait_reply(true)
leases[1][3] = now_s
if served > 0 and woken and leases[1][1] == 0 then signal() end
qflush()
return leases
