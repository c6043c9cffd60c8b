--[[
  Promises. Idle callers are spread over the upcoming slots instead of all
  waking for the first: each dequeue's reply promises the caller the
  earliest ready queue or rate slot not yet promised to another caller
  (`promised`, a queue id, which the caller passes back as dequeue's
  ARGV[5]). A caller serves its promised queue first, and passes over
  queues promised to others while their promise stands (until
  CLAIM_GRACE_US after the slot, so a caller that died delays nobody for
  long). Promises only decide who goes first among ready queues and when
  callers wake, never the rate: politeness is untouched. An unlimited queue
  is never promised: it has no slot to share out. A queue's promise is its
  record's `cl` (record.lua).
]]
--@include "leases"
local slot_moved_earlier, wait_reply, next_queue
-- (The names other files use; the rest stay in the block: see arena.lua.)
do
  -- How many upcoming slots an empty caller may look through for an unclaimed one,
  -- and how long after its slot a claim lapses (a claimant that died).
  local CLAIM_SCAN = 16
  -- (The last rank ZRANGE reads, made a string once, at load: a number
  -- argument is printed as a double, '%.17g', on every call.)
  local CLAIM_SCAN_LAST = '' .. (CLAIM_SCAN - 1)
  local CLAIM_GRACE_US = 20000
  -- A promise is for a slot as it stood: when a queue's slot moves earlier (a
  -- pause ended early, a send reported), whoever comes first may have it, and
  -- the caller woken for it is not turned away until the old slot's time.
  function slot_moved_earlier(st)
    if st.cl > 0 and due_at(st) + CLAIM_GRACE_US < st.cl then st.cl = 0 end
  end

  -- Bounds on when a retry comes due or a lease expires (meta.lua), each with
  -- the count that says whether there is any: made once, not per call.
  local WAIT_BOUNDS = { 'delayat', 'delayed', 'reapat', 'leased' }

  -- The reply's waitUs and promised: when the caller's next call may find
  -- work, and a ready queue or upcoming slot promised to it (see above).
  -- promise_ready: an unpromised ready queue may be promised to the caller at
  -- once (it has just been served and may come straight back for more).
  -- mine: the caller's own promise (a slot moved by a pause is promised to
  -- it again, not counted as someone else's); ahead: as dequeue's ARGV[6].
  function wait_reply(now, promise_ready, mine, ahead)
    if mget('held') == '1' then return -1, '' end
    -- Ready queues first: one not promised yet is promised now; if all are
    -- promised, come back when the first promise lapses (its holder may be gone).
    local w = nil
    local ready = rcall('ZRANGE', K_READY, '0', CLAIM_SCAN_LAST)
    -- (`ready`'s keeper, last, is no queue: schedule.lua.)
    if ready[#ready] == ZSET_KEEPER then ready[#ready] = nil end
    for _, qid in ipairs(ready) do
      local st = qstate(qid)
      if st.cl <= now then
        -- An unlimited queue has no slot to share out: it is ready for whoever
        -- comes, never claimed (a claim would only turn other callers away).
        if st.iv == 0 then return 0, '' end
        if promise_ready then
          st.cl = now + CLAIM_GRACE_US
          qdirty(qid, st)
          return 0, qid
        end
      elseif w == nil or st.cl < w then
        w = st.cl
      end
    end
    if #ready >= CLAIM_SCAN then return 0, '' end
    -- A retry coming due, a lease expiring: by their bounds (past `now` here,
    -- this call having looked behind any that had passed; a bound below its
    -- set's earliest costs one early call at most), when there are any.
    for i = 1, #WAIT_BOUNDS, 2 do
      local e = mget(WAIT_BOUNDS[i])
      -- (0: never set, nothing known.)
      if e > 0 and mget(WAIT_BOUNDS[i + 1]) > 0 and (w == nil or e < w) then w = e end
    end
    -- The earliest rate slot not promised to another caller.
    -- (None to look at when the bound says `sched` is empty: meta.lua.)
    local slots = {}
    if mget('schedat') ~= NEVER then slots = rcall('ZRANGE', K_SCHED, '0', CLAIM_SCAN_LAST, 'WITHSCORES') end
    -- (`sched`'s keeper, last, is no queue: schedule.lua.)
    if slots[#slots - 1] == ZSET_KEEPER then
      slots[#slots] = nil
      slots[#slots] = nil
    end
    for i = 1, #slots, 2 do
      local qid, at = slots[i], tonumber(slots[i + 1])
      if w ~= nil and w <= at then break end
      local st = qstate(qid)
      if st.cl < at or qid == mine then
        st.cl = at + CLAIM_GRACE_US
        qdirty(qid, st)
        -- Come back `ahead` before the slot: it is served to you then.
        return mmax(0, at - now - ahead), qid
      end
    end
    if slots[1] and #slots >= 2 then
      -- Every upcoming slot looked at is promised: come back when the first of
      -- them has been served and its queue has its next slot.
      local again = tonumber(slots[2]) + mmax(qstate(slots[1]).iv, 1000)
      if w == nil or again < w then w = again end
    end
    if w == nil then return -1, '' end
    return mmax(0, w - now), ''
  end

  -- The next queue to serve: a due rate-limited queue at the head, else the
  -- caller's promised one if it is ready, else the head of the round-robin,
  -- passing over (at most CLAIM_SCAN) queues promised to other callers; those
  -- keep their place (`passed`, put back after). promised: the caller's
  -- promised queue on a call's first pick, else ''.
  function next_queue(now, passed, promised)
    if promised ~= '' then
      local q = promised
      -- A rate-limited queue at the head is due: it goes before the promise, which
      -- gives way (its queue keeps its turn and is free for anyone).
      local head = rcall('ZRANGE', K_READY, '0', '0')[1]
      if head and head ~= q and head ~= ZSET_KEEPER and qstate(head).iv > 0 and qstate(head).cl <= now then
        if rcall('ZSCORE', K_READY, q) then
          local st = qstate(q)
          st.cl = 0
          qdirty(q, st)
        end
      elseif rcall('ZREM', K_READY, q) == 1 then
        return q
      end
    end
    for _ = 1, CLAIM_SCAN + 1 do
      local top = rcall('ZPOPMIN', K_READY)
      if not top[1] then return nil end
      -- (`ready`'s keeper comes off only when no queue is left: it goes back.)
      if top[1] == ZSET_KEEPER then
        rcall('ZADD', K_READY, '+inf', ZSET_KEEPER)
        return nil
      end
      -- (The queue popped is most likely served: its record and open chunk come in one read.)
      if #passed >= CLAIM_SCAN or qfetch(top[1]).cl <= now then return top[1] end
      passed[#passed + 1] = top
    end
    return nil
  end
end
