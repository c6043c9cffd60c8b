--[[
  Leases. A lease lives in a slot: a field of the state hash (and the same
  member of `lexp`, which orders expiries) holding its record,
  "<id>:<qid>:<attempt>:<expiry µs>:<item>" (the expiry kept in the record
  too, so ending a lease reads one field). Its id is "<base>.<i>", unique:
  lease i of the dequeue call whose token base was <base>. A new lease's
  slot is its id, or the slot of a lease the same call committed (a worker
  commits a lease and takes the next in one call: its new lease takes the
  old one's place, its record written over the old, its expiry moved, so
  neither is deleted; commits.lua). Its token is "<slot>|<id>:<qid>", or
  "<id>:<qid>" when the slot is the id: a token names its lease's slot (to
  find it), its id (to tell it from a later lease in the same slot) and
  its queue (read with the record). Leases handed out by key-schema 2
  ("<qid>:<attempt>:<expiry>:<item>" under key "<base>.<i>", token
  "<key>:<qid>" or "<key>") are in the `leases` hash until each ends:
  looked for there too while meta 'oldleases' says there may be some.
  Where an item goes when a lease ends without a commit: back to the head,
  to `delayed` for a retry, or to the dead letter when its attempts have
  run out.
]]
--@include "items"
--@include "schedule"
local lease_get, lease_put, free_slots, free_slot, lease_expiry, lease_record, lease_parts, holds, parse_lease, lease_token, token_of, to_dead, requeue, delay_item, reap_expired, current_lease, end_lease
-- (The names other files use; the rest stay in the block: see arena.lua.)
do
  -- Whether key-schema 2's leases hash may still hold leases; when a look
  -- there finds the hash gone, the flag goes.
  local function old_leases()
    return mget('oldleases') == '1'
  end

  local function old_leases_gone()
    if rcall('EXISTS', K_OLD_LEASES) == 0 then mset('oldleases', '0') end
  end

  -- A slot's record as this call sees it (false: none), wherever it is. Read
  -- once per call (or with the meta fields: prefetch_field), then kept as
  -- this call changes it.
  function lease_get(slot)
    -- (The meta read first: it may bring this record.)
    meta()
    local rec = FIELDC[slot]
    if rec == nil then
      rec = rcall('HGET', K_STATE, slot) or false
      FIELDC[slot] = rec
    end
    if rec or not old_leases() then return rec end
    local old = rcall('HGET', K_OLD_LEASES, slot)
    if not old then old_leases_gone() end
    return old or false
  end

  -- A slot's record written (by the call's HSET; out of the old hash if it was there).
  function lease_put(slot, rec)
    defer_hset(slot, rec)
    FIELDC[slot] = rec
    if old_leases() then rcall('HDEL', K_OLD_LEASES, slot) end
  end

  -- Slots emptied, at once: their records (wherever they are) and their
  -- places in `lexp`, in one command per key however many.
  function free_slots(slots)
    for _, slot in ipairs(slots) do
      DEFERRED[slot] = nil
      FIELDC[slot] = false
    end
    if rcall('HDEL', K_STATE, unpack(slots)) < #slots and old_leases() then
      rcall('HDEL', K_OLD_LEASES, unpack(slots))
      old_leases_gone()
    end
    rcall('ZREM', K_LEXP, unpack(slots))
  end

  function free_slot(slot)
    free_slots({ slot })
  end

  -- A member of `lexp` at +inf that is no lease (a slot never holds ':'),
  -- longer than Redis's zset-max-listpack-value (64 bytes by default), so
  -- `lexp` is a skiplist from its first lease on and never empties back
  -- into a listpack. A fleet's leases in flight are mostly fewer than
  -- zset-max-listpack-entries (128), and a listpack's every insert reads
  -- the scores before it: a lease's expiry goes last, so all of them (a
  -- batch of 64 commit-and-takes: 14,900 instructions an item of 150,800,
  -- docs/benchmarks.md). No reader sees it: reaping reads up to now,
  -- earliest() (meta.lua) passes over +inf, and slots are removed by name.
  local LEXP_KEEPER = 'weir:keeps-lexp-a-skiplist:a-member-longer-than-zset-max-listpack-value'
  -- A lease's expiry into `lexp` (a slot given a new lease moves there), the bound kept (meta.lua).
  -- (expires_s: expires as fmt prints it, when the caller has it already.)
  -- (The keeper goes in the same command: an arena cleared, or written by
  -- an older release, gets it back with its next lease.)
  function lease_expiry(slot, expires, expires_s)
    rcall('ZADD', K_LEXP, expires_s or fmt(expires), slot, '+inf', LEXP_KEEPER)
    lower_bound('reapat', expires)
  end

  function lease_record(id, qid, attempt, expires_s, item)
    return id .. ':' .. qid .. ':' .. attempt .. ':' .. expires_s .. ':' .. item
  end

  -- A record's qid, attempt, expiry µs, id (nil for key-schema 2's records,
  -- which have none: their key is their id) and where its item starts (no
  -- copy of the item made: most callers need none). An id has a '.' before
  -- the first ':', a qid never does.
  function lease_parts(rec)
    local a = sfind(rec, ':', 1, true)
    local id, from = nil, 1
    local dot = sfind(rec, '.', 1, true)
    if dot and dot < a then
      id = ssub(rec, 1, a - 1)
      from = a + 1
      a = sfind(rec, ':', from, true)
    end
    local b = sfind(rec, ':', a + 1, true)
    local c = sfind(rec, ':', b + 1, true)
    return ssub(rec, from, a - 1), tonumber(ssub(rec, a + 1, b - 1)), tonumber(ssub(rec, b + 1, c - 1)), id, c + 1
  end

  -- Whether a record is lease `id`'s (it starts "<id>:"), read without
  -- making a string of any part of it.
  function holds(rec, id)
    return rec and sfind(rec, id, 1, true) == 1 and string.byte(rec, #id + 1) == 58
  end

  -- qid, attempt, item, expiry µs, id (as lease_parts).
  function parse_lease(rec)
    local qid, attempt, exp, id, at = lease_parts(rec)
    return qid, attempt, ssub(rec, at), exp, id
  end

  -- A token's slot, id and queue id (nil for a key-schema 2 token without
  -- one). See the header for the forms.
  function lease_token(token)
    local head, qid = token, nil
    local colon = sfind(token, ':', 1, true)
    if colon then
      qid = ssub(token, colon + 1)
      if not string.match(qid, '^%d+$') then raise('WEIR_BAD_ARGS', 'token ' .. token .. ' is not a lease token') end
      head = ssub(token, 1, colon - 1)
    end
    local bar = sfind(head, '|', 1, true)
    if bar then return ssub(head, 1, bar - 1), ssub(head, bar + 1), qid end
    return head, head, qid
  end

  function token_of(slot, id, qid)
    if slot == id then return id .. ':' .. qid end
    return slot .. '|' .. id .. ':' .. qid
  end

  function to_dead(qid, item, attempts, reason, now)
    local st = qstate(qid)
    local rec = cjson.encode({ queue = st.name, item = item, reason = reason, attempts = attempts, at = mfloor(now / 1000) })
    rcall('RPUSH', K_DEAD, rec)
    st.dead = st.dead + 1
    qdirty(qid, st)
    mincr('dead', 1)
  end

  -- Where an item goes when its lease ends without a commit. id: the lease's
  -- (unique, unlike its slot: it names the retry in `delayed`). attempts:
  -- deliveries that count against maxAttempts so far.
  -- An item that comes back to its queue at `at` (µs): as a retry, to the
  -- head with its attempts (`attempts` a number), or as a revisit, to the
  -- tail with none (`attempts` 'r'). Record "<qid>:<attempts>:<reason
  -- length>:<reason><item>" (promote.lua promote_due_retries).
  function delay_item(id, qid, item, attempts, reason, at)
    rcall('ZADD', K_DELAYED, fmt(at), id)
    lower_bound('delayat', at)
    rcall('HSET', K_DELAYDATA, id, qid .. ':' .. (attempts == 'r' and 'r' or fmt(attempts)) .. ':' .. #reason .. ':' .. reason .. item)
    local st = qstate(qid)
    st.d = st.d + 1
    qdirty(qid, st)
    mincr('delayed', 1)
  end

  function requeue(id, qid, item, attempts, reason, delay_us, now)
    if attempts >= max_attempts() then
      to_dead(qid, item, attempts, reason, now)
    elseif delay_us > 0 then
      delay_item(id, qid, item, attempts, reason, now + delay_us)
    else
      push_front(qid, qstate(qid), item, attempts, reason)
    end
  end

  -- Ends a lease's slot (the caller decides where the item goes).
  local function drop_lease(slot, qid)
    free_slot(slot)
    local st = qstate(qid)
    st.l = st.l - 1
    qdirty(qid, st)
    mincr('leased', -1)
  end

  -- An expired lease: the item goes back to the head of its queue and the
  -- delivery counts as an attempt.
  local function expire_lease(slot, rec, now)
    local qid, attempt, item, _, id = parse_lease(rec)
    drop_lease(slot, qid)
    mincr('expired', 1)
    requeue(id or slot, qid, item, attempt, 'lease expired', 0, now)
    return activate(qid, now)
  end

  -- Expired leases one call takes back at most (bounding its work).
  local REAP_BATCH = 100

  function reap_expired(now)
    if not bound_passed('reapat', now) then return false end
    local woke = false
    local expired = rcall('ZRANGEBYSCORE', K_LEXP, '-inf', fmt(now), 'LIMIT', 0, REAP_BATCH)
    for _, slot in ipairs(expired) do
      local rec = lease_get(slot)
      if rec then
        if expire_lease(slot, rec, now) then woke = true end
      else
        rcall('ZREM', K_LEXP, slot)
      end
    end
    reset_bound('reapat', K_LEXP)
    return woke
  end

  -- The record of the lease a token names, if that lease is current: its slot
  -- holds it (not a later lease) and its expiry has not passed; with it, its
  -- qid and its id as recorded (nil: key-schema 2's). An expired one is
  -- expired here and then (so it goes back exactly once).
  function current_lease(slot, id, now)
    local rec = lease_get(slot)
    if not rec then return nil end
    local qid, _, exp, rid = lease_parts(rec)
    if (rid or slot) ~= id then return nil end
    if exp <= now then
      if expire_lease(slot, rec, now) then signal() end
      return nil
    end
    return rec, qid, rid
  end

  -- Ends the caller's lease for release/retry/fail: qid, attempt, item, id,
  -- or nil when the lease is stale (the caller then answers 0).
  function end_lease(token, now)
    local slot, id = lease_token(token)
    local rec = current_lease(slot, id, now)
    if not rec then return nil end
    local qid, attempt, item = parse_lease(rec)
    drop_lease(slot, qid)
    return qid, attempt, item, id
  end
end
