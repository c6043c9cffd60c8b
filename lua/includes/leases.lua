--[[
  Leases: a lease record is "<qid>:<attempt>:<expiry µs>:<item>", field
  "<base>.<i>" (the lease key) of the state hash, written with the call's
  HSET (the expiry kept in the record too, besides `lexp`, which orders
  expiries, so ending a lease reads one field). Leases handed out by
  key-schema 2 are in the `leases` hash until each ends: looked for there
  too while meta 'oldleases' says there may be some. Where an item goes when a lease ends
  without a commit: back to the head, to `delayed` for a retry, or to the
  dead letter when its attempts have run out.
]]
--@include "items"
--@include "schedule"

-- Whether key-schema 2's leases hash may still hold leases; when a look
-- there finds the hash gone, the flag goes.
local function old_leases()
  return mget('oldleases') == '1'
end

local function old_leases_gone()
  if redis.call('EXISTS', K_OLD_LEASES) == 0 then mset('oldleases', '0') end
end

-- A lease's record, wherever it is.
local function lease_get(key)
  local rec = redis.call('HGET', K_STATE, key)
  if rec or not old_leases() then return rec end
  rec = redis.call('HGET', K_OLD_LEASES, key)
  if not rec then old_leases_gone() end
  return rec
end

-- A lease's record written (moved out of the old hash if it was there).
local function lease_put(key, rec)
  defer_hset(key, rec)
  if old_leases() then redis.call('HDEL', K_OLD_LEASES, key) end
end

-- A lease's record deleted: whether it was there.
local function lease_del(key)
  if redis.call('HDEL', K_STATE, key) == 1 then return true end
  if not old_leases() then return false end
  local was = redis.call('HDEL', K_OLD_LEASES, key) == 1
  old_leases_gone()
  return was
end

-- A lease's expiry into `lexp`, the bound kept (meta.lua).
local function lease_expiry(token, expires)
  redis.call('ZADD', K_LEXP, fmt(expires), token)
  lower_bound('reapat', expires)
end

local function lease_record(qid, attempt, expires_s, item)
  return qid .. ':' .. attempt .. ':' .. expires_s .. ':' .. item
end

-- qid, attempt, item, expiry µs
local function parse_lease(rec)
  local a = string.find(rec, ':', 1, true)
  local b = string.find(rec, ':', a + 1, true)
  local c = string.find(rec, ':', b + 1, true)
  return string.sub(rec, 1, a - 1), tonumber(string.sub(rec, a + 1, b - 1)), string.sub(rec, c + 1), tonumber(string.sub(rec, b + 1, c - 1))
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
    lower_bound('delayat', now + delay_us)
    redis.call('HSET', K_DELAYDATA, token, qid .. ':' .. fmt(attempts) .. ':' .. #reason .. ':' .. reason .. item)
    local st = qstate(qid)
    st.d = st.d + 1
    qdirty(qid, st)
    mincr('delayed', 1)
  else
    push_front(qid, qstate(qid), item, attempts, reason)
  end
end

-- Ends a lease record (the caller decides where the item goes).
local function drop_lease(token, qid)
  lease_del(token)
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

-- Expired leases one call takes back at most (bounding its work).
local REAP_BATCH = 100

local function reap_expired(now, limit)
  if not bound_passed('reapat', now) then return false end
  local woke = false
  local expired = redis.call('ZRANGEBYSCORE', K_LEXP, '-inf', fmt(now), 'LIMIT', 0, limit)
  for _, token in ipairs(expired) do
    local rec = lease_get(token)
    if rec then
      if expire_lease(token, rec, now) then woke = true end
    else
      redis.call('ZREM', K_LEXP, token)
    end
  end
  reset_bound('reapat', K_LEXP)
  return woke
end

-- A lease's token is its key in `leases` ("<base>.<i>"), a colon and its
-- queue id (dequeue.lua hands them out so): the id lets a commit end a
-- lease without reading its record. A key alone (a token from before ids
-- rode in it) is a token too. Returns key, qid (nil without one).
local function lease_key(token)
  local at = string.find(token, ':', 1, true)
  if not at then return token, nil end
  local qid = string.sub(token, at + 1)
  if not string.match(qid, '^%d+$') then raise('WEIR_BAD_ARGS', 'token ' .. token .. ' is not a lease token') end
  return string.sub(token, 1, at - 1), qid
end

-- The queues of leases about to be committed, read with the meta fields
-- (with their head chunks for a dequeue: its next item mostly comes from
-- the queue its commit was of).
local function prefetch_leases(tokens, with_head)
  for _, token in ipairs(tokens) do
    local _, qid = lease_key(token)
    if qid then prefetch(qid, with_head) end
  end
end

-- Looks a lease up for commit/extend/release/retry/fail by its key. A lease
-- is current while its record exists and its expiry has not passed; an
-- expired one is expired here and then (so it goes back exactly once) and
-- reported stale.
local function current_lease(key, now)
  local rec = lease_get(key)
  if not rec then return nil end
  local _, _, _, exp = parse_lease(rec)
  if exp <= now then
    if expire_lease(key, rec, now) then signal() end
    return nil
  end
  return rec
end

-- Ends the caller's lease for release/retry/fail: qid, attempt, item, or nil
-- when the lease is stale (the caller then answers 0).
local function end_lease(key, now)
  local rec = current_lease(key, now)
  if not rec then return nil end
  local qid, attempt, item = parse_lease(rec)
  drop_lease(key, qid)
  return qid, attempt, item
end

-- Ends leases as done (commit.lua; dequeue.lua before it serves): for each
-- token 1 (committed) or 0 (stale: expired, or ended by another call; an
-- expired lease that had not gone back yet goes back now, exactly once).
-- Per-queue counts change once per queue, not once per lease. Returns the
-- list of results, whether a queue left its in-flight cap (signal), and
-- whether reaping made work ready.
--
-- Expired leases are reaped first (reap_expired): when that leaves none
-- whose expiry has passed, a lease whose record is still there is current,
-- so a token with its queue id is ended by deleting its record, unread. (A
-- token whose id names no queue is looked up the long way.) Every token is
-- checked before anything is written.
local function commit_leases(tokens, now)
  local out, per_queue, order = {}, {}, {}
  local done = 0
  local keys, qids = {}, {}
  for i, token in ipairs(tokens) do keys[i], qids[i] = lease_key(token) end
  local reaped = reap_expired(now, REAP_BATCH)
  local unread = not bound_passed('reapat', now)
  for i = 1, #keys do
    if qids[i] and not (unread and qstate_if_any(qids[i])) then qids[i] = nil end
  end
  for i, key in ipairs(keys) do
    local qid = nil
    out[i] = 0
    if qids[i] then
      if lease_del(key) then qid = qids[i] end
    else
      local rec = current_lease(key, now)
      if rec then
        qid = parse_lease(rec)
        lease_del(key)
      end
    end
    if qid then
      redis.call('ZREM', K_LEXP, key)
      if not per_queue[qid] then
        per_queue[qid] = 0
        order[#order + 1] = qid
      end
      per_queue[qid] = per_queue[qid] + 1
      done = done + 1
      out[i] = 1
    end
  end
  local woke = false
  for _, qid in ipairs(order) do
    local st = qstate(qid)
    local was_capped = st.cap > 0 and st.l >= st.cap
    st.l = st.l - per_queue[qid]
    st.done = st.done + per_queue[qid]
    qdirty(qid, st)
    -- Only the in-flight cap depends on leases: a queue below it is placed already.
    if was_capped and activate(qid, now) then woke = true end
  end
  if done > 0 then
    mincr('leased', -done)
    mincr('done', done)
  end
  return out, woke, reaped
end
