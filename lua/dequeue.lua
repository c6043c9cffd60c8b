--[[
  dequeue: lease up to `count` items by the arena's fair, rate-limited schedule.

  KEYS: the arena key block (lua/includes/keys.lua).
  ARGV[1]  lease token base chosen by the client (8..48 bytes, random, no ':'
           or '|'); lease i of this call gets the id "<base>.<i>" (its token:
           leases.lua); a base already used replays that call's answer (its
           leases still held)
  ARGV[2]  lease duration in ms (1..MAX_LEASE_MS)
  ARGV[3]  '1' when the caller was woken by the wake list (it then passes the
           wake-up on if more work is ready), else '0'
  ARGV[4]  count: most leases to hand out (1..MAX_PER_CALL)
  ARGV[5]  the queue id this caller was promised by its last reply, or ''
  ARGV[6]  ahead: µs (0..MAX_AHEAD_MS*1000) before a slot this caller may be
           served it; the lease's servedAt is then the slot itself (later than
           now), and the caller must not act before it (see "Ahead")
  ARGV[7]  '1' to be told how many queues are ready (the reply's readyCount:
           a client spreading its calls over an arena's shards weighs each
           shard by it), else ''
  ARGV[8..] lease tokens to commit first (0..MAX_PER_CALL): a worker done
           with one URL ends its lease and asks for the next in one call

  Steps, all on Redis time: reap expired leases, commit the tokens given,
  replay (a resent call gets its own leases back; only a call none of
  whose commits took can be one), promote due retries, promote due queues,
  serve one item per turn of the round-robin, and reply (with a promise).
  A served queue goes back to the tail of the round-robin, or to `sched` at
  its next allowed time, so a batch is as fair and as polite as single calls.

  Due queues by their fair turn (max-min fairness, as start-time fair
  queuing). Turns count serves. A rate-limited queue whose slot has come
  re-enters the round-robin where its turn would be had it stayed in it: one
  interval's worth of serves (its interval ÷ the arena's recent µs per
  serve) before the tail, but never ahead of the head. So a queue whose rate
  is below its fair share (its interval longer than a turn of the
  round-robin) goes to the head and gets its whole rate however many
  always-ready queues there are, and one asking for more gets the fair share.

  Ahead. A caller that holds each lease to its slot itself (the crawler's
  pacer does) passes `ahead`: a slot up to that far in the future may be
  served now, with servedAt = the slot, and the queue's next slot is counted
  from that slot, not from whenever the call happened to run. Two servedAt of
  a queue are never less than its interval apart, and a caller that is late
  costs only its own slot, never the pace of the slots after it.

  Returns {{waitUs, promised, nowUs, committed, readyCount}, lease, lease, ...}, each
  lease {token, queue, item, attempt, expiresAtMs, servedAtUs, intervalUs, capped}; nowUs is
  Redis's clock, intervalUs the queue's interval (0 = unlimited), capped 1 when
  the serve left the queue at its in-flight cap with items waiting (the
  lease's commit will free it: a client carries that commit in its next
  dequeue rather than sending it alone). waitUs
  tells the caller when its next call may find work: 0 when more is ready
  now, else how long until something may become ready (a rate slot, a
  retry, a lease expiry), or -1 when nothing will without a new
  enqueue/commit/unhold (block on the wake list then). committed has a
  character per token of ARGV[8..]: '1' committed, '0' stale (as commit.lua);
  a replayed call reports them committed, the call it repeats having run.

  Promises. Idle callers are spread over the upcoming slots instead of all
  waking for the first: each reply promises the caller the earliest ready
  queue or rate slot not yet promised to another caller (`promised`, a queue
  id, which the caller passes back as ARGV[5]). A caller serves its promised
  queue first, and passes over queues promised to others while their promise
  stands (until CLAIM_GRACE_US after the slot, so a caller that died delays
  nobody for long). Promises only decide who goes first among ready queues
  and when callers wake, never the rate: politeness is untouched. An
  unlimited queue is never promised: it has no slot to share out.
  Errors: WEIR_BAD_ARGS, WEIR_SCHEMA.
]]
--@include "arena"

-- Bounds on the upkeep one call does, so no call can block Redis for long
-- (and leases.lua's REAP_BATCH).
local PROMOTE_BATCH = 100
-- Turns a call may spend on queues that turn out not to be servable.
local POP_TRIES = 16
-- How many upcoming slots an empty caller may look through for an unclaimed one,
-- and how long after its slot a claim lapses (a claimant that died).
local CLAIM_SCAN = 16
local CLAIM_GRACE_US = 20000
-- Weight of the newest serve in the arena's pace estimate (meta 'gap': µs between serves).
local PACE_WEIGHT = 0.05

if #ARGV < 7 or #ARGV > 7 + MAX_PER_CALL then
  raise('WEIR_BAD_ARGS', 'expected 7 arguments (token leaseMs woken count promised ahead readyCount) and up to ' .. MAX_PER_CALL .. ' tokens to commit, got ' .. #ARGV)
end
local base = str_arg(1, 'token', 48, false)
if #base < 8 then raise('WEIR_BAD_ARGS', 'token must be at least 8 bytes') end
if string.find(base, ':', 1, true) or string.find(base, '|', 1, true) then raise('WEIR_BAD_ARGS', "token must not hold ':' or '|'") end
local lease_ms = int_arg(2, 'leaseMs', 1, MAX_LEASE_MS)
local woken = ARGV[3] == '1'
local count = int_arg(4, 'count', 1, MAX_PER_CALL)
local promised = str_arg(5, 'promised', 20, true)
if promised ~= '' and not string.match(promised, '^%d+$') then raise('WEIR_BAD_ARGS', 'promised must be a queue id') end
local ahead = int_arg(6, 'ahead', 0, MAX_AHEAD_MS * 1000)
local want_ready = ARGV[7] == '1'
local commits = {}
for i = 8, #ARGV do commits[#commits + 1] = str_arg(i, 'token', MAX_TOKEN_BYTES, false) end
-- The caller's own promise: if its slot has moved (a pause pushed it), it is
-- promised to this caller again rather than counted as someone else's.
local mine = promised
-- The queues this call knows it will touch come with the meta fields.
local parsed = prefetch_leases(commits, true)
if promised ~= '' then prefetch(promised, true) end
ensure_schema()

-- (capped: the queue is left at its in-flight cap with items waiting, so
-- this lease's commit frees it: see the header.)
-- (The token handed out names the lease's slot, id and queue: leases.lua.)
local function lease_reply(slot, id, qid, st, item, attempt, expires_ms, served_s)
  local capped = (st.cap > 0 and st.l >= st.cap and st.q > 0) and 1 or 0
  -- (An interval is mostly whole µs, and most often 0: fmt prints those for a tenth of '%.3f'.)
  local iv = st.iv % 1 == 0 and fmt(st.iv) or string.format('%.3f', st.iv)
  return { token_of(slot, id, qid), st.name, item, attempt, expires_ms, served_s, iv, capped }
end

-- The same call again (a client resending after a lost reply, as ioredis
-- does after a reconnect): the leases this token base was given and still
-- holds, instead of serving more; nil when the base is new. The original
-- call put them first in the slots its commits freed, in order, then in
-- slots of their own ("<base>.<i>"). Their serve time is given as now,
-- which only makes a caller that keeps spacing from it wait longer.
local function replay(now)
  local mine = base .. '.'
  local now_s = fmt(now)
  local again = { { 0, '', now_s, '', -1 } }
  local function add(slot, rec)
    local qid, attempt, item, exp, id = parse_lease(rec)
    again[#again + 1] = lease_reply(slot, id or slot, qid, qstate(qid), item, attempt, fmt(math.floor(exp / 1000)), now_s)
  end
  for _, p in ipairs(parsed) do
    local rec = lease_get(p[1])
    if rec then
      local _, _, _, id = lease_parts(rec)
      if id and string.sub(id, 1, #mine) == mine then add(p[1], rec) end
    end
  end
  for i = #again, count do
    local rec = lease_get(mine .. i)
    if not rec then break end
    add(mine .. i, rec)
  end
  if #again == 1 then return nil end
  return again
end

-- Retries whose delay is over go back to the head of their queue.
local function promote_due_retries(now)
  if not bound_passed('delayat', now) then return end
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
      local st = qstate(qid)
      st.d = st.d - 1
      mincr('delayed', -1)
      push_front(qid, st, string.sub(rec, c + rlen + 1), attempts, string.sub(rec, c + 1, c + rlen))
      activate(qid, now)
    end
  end
  reset_bound('delayat', K_DELAYED)
end

-- Queues whose slot has come (or comes within `ahead`) leave `sched`, earliest
-- first, for the round-robin at their fair turn (see the header).
local function promote_due_queues(horizon)
  if not bound_passed('schedat', horizon) then return end
  local due = redis.call('ZRANGEBYSCORE', K_SCHED, '-inf', fmt(horizon), 'LIMIT', 0, PROMOTE_BATCH)
  if #due == 0 then return reset_bound('schedat', K_SCHED) end
  local turn, gap = mget('turn'), mget('gap')
  local head = redis.call('ZRANGE', K_READY, 0, 0, 'WITHSCORES')
  local first = tonumber(head[2] or turn)
  for i, qid in ipairs(due) do
    redis.call('ZREM', K_SCHED, qid)
    local skipped = gap > 0 and qstate(qid).iv / gap or math.huge
    -- (+ i/1000: queues placed together keep their slots' order.)
    redis.call('ZADD', K_READY, string.format('%.3f', math.max(turn - skipped, first - 1) + i / 1000), qid)
  end
  reset_bound('schedat', K_SCHED)
end

-- The arena's pace after `served` more serves at `now`: a moving average of
-- the µs between serves (an idle spell counts as at most a second), kept in
-- meta ('gap', 'lastserve') for the fair-share test above.
local function paced(gap, last, now, served)
  -- (A clock stepped back counts as no time.)
  local g = math.max(0, math.min(now - last, 1000000)) / served
  if last == 0 then return g end
  return gap + PACE_WEIGHT * (g - gap)
end

-- The reply's head {waitUs, promised}: when the caller's next call may find
-- work, and a ready queue or upcoming slot promised to it (see the header).
-- promise_ready: an unpromised ready queue may be promised to the caller at
-- once (it has just been served and may come straight back for more).
local function wait_reply(now, promise_ready)
  if mget('held') == '1' then return { -1, '' } end
  -- Ready queues first: one not promised yet is promised now; if all are
  -- promised, come back when the first promise lapses (its holder may be gone).
  local w = nil
  local ready = redis.call('ZRANGE', K_READY, 0, CLAIM_SCAN - 1)
  for _, qid in ipairs(ready) do
    local st = qstate(qid)
    if st.cl <= now then
      -- An unlimited queue has no slot to share out: it is ready for whoever
      -- comes, never claimed (a claim would only turn other callers away).
      if st.iv == 0 then return { 0, '' } end
      if promise_ready then
        st.cl = now + CLAIM_GRACE_US
        qdirty(qid, st)
        return { 0, qid }
      end
    elseif w == nil or st.cl < w then
      w = st.cl
    end
  end
  if #ready >= CLAIM_SCAN then return { 0, '' } end
  -- A retry coming due, a lease expiring: by their bounds (past `now` here,
  -- this call having looked behind any that had passed; a bound below its
  -- set's earliest costs one early call at most), when there are any.
  for field, count in pairs({ delayat = 'delayed', reapat = 'leased' }) do
    local e = mget(field)
    -- (0: never set, nothing known.)
    if e > 0 and mget(count) > 0 and (w == nil or e < w) then w = e end
  end
  -- The earliest rate slot not promised to another caller.
  -- (None to look at when the bound says `sched` is empty: meta.lua.)
  local slots = {}
  if mget('schedat') ~= NEVER then slots = redis.call('ZRANGE', K_SCHED, 0, CLAIM_SCAN - 1, 'WITHSCORES') end
  for i = 1, #slots, 2 do
    local qid, at = slots[i], tonumber(slots[i + 1])
    if w ~= nil and w <= at then break end
    local st = qstate(qid)
    if st.cl < at or qid == mine then
      st.cl = at + CLAIM_GRACE_US
      qdirty(qid, st)
      -- Come back `ahead` before the slot: it is served to you then.
      return { math.max(0, at - now - ahead), qid }
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

-- The next queue to serve: a due rate-limited queue at the head, else the
-- caller's promised one if it is ready, else the head of the round-robin,
-- passing over (at most CLAIM_SCAN) queues promised to other callers; those
-- keep their place (`passed`, put back after).
local function next_queue(now, passed)
  if promised ~= '' then
    local q = promised
    promised = ''
    -- A rate-limited queue at the head is due: it goes before the promise, which
    -- gives way (its queue keeps its turn and is free for anyone).
    local head = redis.call('ZRANGE', K_READY, 0, 0)[1]
    if head and head ~= q and qstate(head).iv > 0 and qstate(head).cl <= now then
      if redis.call('ZSCORE', K_READY, q) then
        local st = qstate(q)
        st.cl = 0
        qdirty(q, st)
      end
    elseif redis.call('ZREM', K_READY, q) == 1 then
      return q
    end
  end
  for _ = 1, CLAIM_SCAN + 1 do
    local top = redis.call('ZPOPMIN', K_READY)
    if not top[1] then return nil end
    -- (The queue popped is most likely served: its record and open chunk come in one read.)
    if #passed >= CLAIM_SCAN or qfetch(top[1]).cl <= now then return top[1] end
    passed[#passed + 1] = top
  end
  return nil
end

-- Politeness: the next serve of a queue is one interval after this one; the
-- interval's fraction of a µs is carried to the next. (For an unlimited
-- queue nx is the last serve: a later, lower rate starts from it.)
local function advance(st, served)
  local whole = math.floor(st.iv)
  st.c = st.c + (st.iv - whole)
  if st.c >= 1 then
    whole = whole + 1
    st.c = st.c - 1
  end
  st.nx = served + whole
end

-- The record of the queue the last serve put back into `ready`, if it did.
local last_back = nil

-- Serves up to `count` items, one per turn. Queue records are cached for
-- the call (a batch may serve one queue many times) and written once by
-- flush(); arena counters and the turn counter are summed and written once.
local function serve(now, horizon)
  local leases = {}
  local passed = {}
  local turn = mget('turn')
  local expires = now + lease_ms * 1000
  local expires_s, expires_ms = fmt(expires), fmt(math.floor(expires / 1000))
  local taken = 0
  for _ = 1, count + POP_TRIES do
    if #leases >= count then break end
    local qid = next_queue(now, passed)
    if not qid then break end
    local st = qstate(qid)
    if servable(st, horizon) then
      -- Its slot, or now if that has passed: a late call never moves a slot earlier.
      local served = math.max(now, due_at(st))
      local item, attempts = take_head(qid, st)
      st.cl = 0
      taken = taken + 1
      -- Every serve is a turn, wherever its queue goes next (see the header).
      turn = turn + 1
      -- (A missing item only follows outside tampering: it is skipped, counts kept right.)
      if item then
        st.l = st.l + 1
        -- A slot this call's commits freed, else one of its own (leases.lua).
        local id = base .. '.' .. (#leases + 1)
        local slot = take_slot() or id
        lease_put(slot, lease_record(id, qid, attempts + 1, expires_s, item))
        lease_expiry(slot, expires, expires_s)
        advance(st, served)
        leases[#leases + 1] = lease_reply(slot, id, qid, st, item, attempts + 1, expires_ms, fmt(served))
      end
      -- Back into the schedule: the tail of the round-robin, or `sched` at its next time.
      last_back = nil
      if schedulable(st) then
        if due_at(st) <= horizon then
          redis.call('ZADD', K_READY, turn, qid)
          last_back = st
        else
          sched_add(qid, due_at(st))
        end
      end
    else
      -- Not servable after all: let activate() place it, handing it the turn
      -- counter it numbers with.
      mset('turn', turn)
      activate(qid, horizon)
      turn = mget('turn')
    end
  end
  for _, top in ipairs(passed) do
    redis.call('ZADD', K_READY, top[2], top[1])
  end
  if taken > 0 then
    mset('gap', paced(mget('gap'), mget('lastserve'), now, taken))
    mset('lastserve', now)
    mincr('queued', -taken)
    mincr('leased', #leases)
  end
  if mget('turn') ~= turn then
    mset('turn', turn)
  end
  return leases
end

local now = now_us()
-- (Expired leases are reaped there, first: what they make ready this call serves.)
local committed, freed = commit_leases(parsed, now)
-- A call resent after a lost reply finds its commits done already (by the
-- call it repeats): only a call none of whose commits took can be one, so
-- only such a call looks.
local any_committed = false
for _, c in ipairs(committed) do
  if c == 1 then any_committed = true end
end
local again = not any_committed and replay(now)
if again then
  again[1][4] = string.rep('1', #commits)
  flush()
  return again
end
local horizon = now + ahead
promote_due_retries(now)
promote_due_queues(horizon)
local held = mget('held') == '1'
local leases = {}
if not held then leases = serve(now, horizon) end
-- Every lease asked for served, the last from an unlimited queue that went
-- straight back to the ready set (the call ended there): more is ready now,
-- and an unlimited queue is never promised, so the reply needs no look at
-- the schedule.
local head
if #leases == count and last_back and last_back.iv == 0 then
  head = { 0, '' }
else
  head = wait_reply(now, not held)
end
head[3] = fmt(now)
head[4] = table.concat(committed)
head[5] = want_ready and redis.call('ZCARD', K_READY) or -1
-- More is ready than this caller took: pass a wake-up on (when it was woken,
-- or its commits freed a queue's in-flight cap).
if ((#leases > 0 and woken) or freed) and head[1] == 0 then signal() end
flush()
table.insert(leases, 1, head)
return leases
