--[[
  dequeue: lease the next item by the arena's fair, rate-limited schedule.

  KEYS: the arena key block (lua/includes/arena.lua).
  ARGV[1]  lease token chosen by the client (8..64 bytes, unique)
  ARGV[2]  lease duration in ms (1..86400000)
  ARGV[3]  '1' when the caller was woken by the wake list (it then passes the
           wake-up on if more work is ready), else '0'

  Each call first does a bounded amount of upkeep, all on Redis time:
  expired leases go back to the head of their queue (counting an attempt),
  retried items whose delay is over go back to the head of theirs, and
  queues whose next allowed time has come join the tail of the round-robin
  order. Then it serves the queue at the head of that order.

  Returns {token, queue, item, attempt, expiresAtMs, servedAtUs} or
          {false, waitUs}: waitUs is how long until something may become
          ready (a rate slot, a retry, a lease expiry), -1 when nothing will
          without a new enqueue/commit/unhold (then block on the wake list).
  Errors: WEIR_BAD_ARGS, WEIR_SCHEMA.
]]
--@include "arena"

argc(3, 'token leaseMs woken')
local token = str_arg(1, 'token', 64, false)
if #token < 8 then fail('WEIR_BAD_ARGS', 'token must be at least 8 bytes') end
local lease_ms = int_arg(2, 'leaseMs', 1, 86400000)
local woken = ARGV[3] == '1'
ensure_schema()
if redis.call('HEXISTS', K_LEASES, token) == 1 then fail('WEIR_BAD_ARGS', 'lease token is already in use') end

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
    qincr(qid, 'd', -1)
    mincr('delayed', -1)
    push_item(qid, item, attempts, reason, true)
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
  if redis.call('HGET', K_META, 'held') == '1' then return { false, -1 } end
  local w = nil
  for _, z in ipairs({ K_SCHED, K_DELAYED, K_LEXP }) do
    local e = earliest(z)
    if e and (w == nil or e < w) then w = e end
  end
  if w == nil then return { false, -1 } end
  return { false, math.max(0, w - now) }
end

if redis.call('HGET', K_META, 'held') == '1' then return wait_reply() end

for _ = 1, POP_TRIES do
  local top = redis.call('ZPOPMIN', K_READY)
  local qid = top[1]
  if not qid then break end
  local f = redis.call('HMGET', K_QUEUES, qf(qid, 'q'), qf(qid, 'l'), qf(qid, 'cap'), qf(qid, 'nx'), qf(qid, 'p'), qf(qid, 'hold'), qf(qid, 'h'))
  local queued, leased, cap = tonumber(f[1] or '0'), tonumber(f[2] or '0'), tonumber(f[3] or '0')
  local at = math.max(tonumber(f[4] or '0'), tonumber(f[5] or '0'))
  if queued > 0 and f[6] ~= '1' and (cap == 0 or leased < cap) and at <= now then
    local seq = tonumber(f[7] or '0')
    local field = qid .. ':' .. fmt(seq)
    local item = redis.call('HGET', K_ITEMS, field)
    qset(qid, 'h', fmt(seq + 1))
    qincr(qid, 'q', -1)
    mincr('queued', -1)
    if item then
      redis.call('HDEL', K_ITEMS, field)
      local attempt = 1
      local prev = redis.call('HGET', K_RETRIES, field)
      if prev then
        redis.call('HDEL', K_RETRIES, field)
        attempt = tonumber(string.sub(prev, 1, string.find(prev, ':', 1, true) - 1)) + 1
      end
      local expires = now + lease_ms * 1000
      redis.call('HSET', K_LEASES, token, qid .. ':' .. attempt .. ':' .. item)
      redis.call('ZADD', K_LEXP, fmt(expires), token)
      qincr(qid, 'l', 1)
      mincr('leased', 1)
      -- Politeness: the next serve of this queue is one interval after this one.
      local iv = tonumber(qget(qid, 'iv') or '0')
      if iv > 0 then
        local whole = math.floor(iv)
        local carry = qnum(qid, 'c') + (iv - whole)
        if carry >= 1 then
          whole = whole + 1
          carry = carry - 1
        end
        qset(qid, 'nx', fmt(now + whole))
        qset(qid, 'c', string.format('%.17g', carry))
      end
      activate(qid, now)
      if woken and redis.call('ZCARD', K_READY) > 0 then signal() end
      return { token, qget(qid, 'name'), item, attempt, fmt(math.floor(expires / 1000)), fmt(now) }
    end
    -- A missing item (only after outside tampering): skip it, keep the queue right.
  end
  activate(qid, now)
end
return wait_reply()
