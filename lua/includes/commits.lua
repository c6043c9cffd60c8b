--[[
  Commits: leases ended as done (commit.lua; dequeue.lua before it serves).
  A slot a commit frees is given to the call's next new lease, if it has
  one (dequeue: take_slot): its record is written over and its expiry
  moved, instead of one slot deleted and another added (two commands a
  page). Slots left over are deleted when the call writes back (arena.lua
  flush: release_slots).
]]
--@include "leases"
local commits_reset, prefetch_leases, take_slot, release_slots, commit_leases
-- (The names other files use; the rest stay in the block: see arena.lua.)
do
  -- Slots freed by this call's commits, in order, and how many of them its
  -- new leases have taken.
  local FREED = {}
  local FREED_TAKEN = 0

  function commits_reset()
    FREED, FREED_TAKEN = {}, 0
  end

  -- The tokens a call will commit, parsed ({slot, id, qid}); their leases'
  -- records (and their queues', with their head chunks for a dequeue: its
  -- next item mostly comes from the queue its commit was of) come with the
  -- meta fields.
  function prefetch_leases(tokens, with_head)
    local parsed = {}
    for i, token in ipairs(tokens) do
      local slot, id, qid = lease_token(token)
      parsed[i] = { slot, id, qid }
      prefetch_field(slot)
      if qid then prefetch(qid, with_head) end
    end
    return parsed
  end

  -- A freed slot for a new lease, or nil.
  function take_slot()
    if FREED_TAKEN >= #FREED then return nil end
    FREED_TAKEN = FREED_TAKEN + 1
    return FREED[FREED_TAKEN]
  end

  -- The freed slots no new lease took, deleted (together: a call that
  -- carries more commits than it serves leases has several).
  function release_slots()
    if FREED_TAKEN >= #FREED then return end
    free_slots({ unpack(FREED, FREED_TAKEN + 1) })
    FREED_TAKEN = #FREED
  end

  -- Ends leases as done (tokens as prefetch_leases parsed them): for each token 1 (committed) or 0 (stale: expired,
  -- ended by another call, or its slot holds a later lease; an expired lease
  -- that had not gone back yet goes back now, exactly once). Expired leases
  -- are reaped first. Per-queue counts change once per queue, not once per
  -- lease. Returns the list of results, whether a queue left its in-flight
  -- cap (signal), and whether reaping made work ready.
  function commit_leases(parsed, now)
    local out, per_queue, order = {}, {}, {}
    local done = 0
    local reaped = reap_expired(now)
    -- With no expired lease left, a record whose id is the token's is its
    -- current lease: nothing of it need be parsed (the token's queue id is
    -- trusted like the token itself). Otherwise, the long way.
    local none_expired = not bound_passed('reapat', now)
    for i, p in ipairs(parsed) do
      local slot, qid = p[1], p[3]
      out[i] = 0
      local rec, rid
      if none_expired and qid and qstate_if_any(qid) and holds(lease_get(slot), p[2]) then
        rec, rid = true, true
      else
        rec, qid, rid = current_lease(slot, p[2], now)
      end
      if rec then
        if rid then
          -- (Ended now for this call: a second token for it is stale.)
          FIELDC[slot] = false
          FREED[#FREED + 1] = slot
        else
          -- (Key-schema 2's: its slot is not given again.)
          free_slot(slot)
        end
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
      if was_capped and activate_parked(qid, now) then woke = true end
    end
    if done > 0 then
      mincr('leased', -done)
      mincr('done', done)
    end
    return out, woke, reaped
  end
end
