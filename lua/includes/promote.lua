--[[
  Work coming due, moved to where a dequeue serves from (dequeue.lua's
  first steps): retries whose delay is over go back to the head of their
  queue, and queues whose rate slot has come leave `sched` for the
  round-robin at their fair turn.

  Fair turns (max-min fairness, as start-time fair queuing). Turns count
  serves. A rate-limited queue whose slot has come re-enters the
  round-robin where its turn would be had it stayed in it: one interval's
  worth of serves (its interval ÷ the arena's recent µs per serve, meta
  'gap': serve.lua) before the tail, but never ahead of the head. So a queue
  whose rate is below its fair share (its interval longer than a turn of
  the round-robin) goes to the head and gets its whole rate however many
  always-ready queues there are, and one asking for more gets the fair share.
]]
--@include "leases"
local promote_due_retries, promote_due_queues
-- (The names other files use; the rest stay in the block: see arena.lua.)
do
  -- Bounds on the upkeep one call does, so no call can block Redis for long
  -- (and leases.lua's REAP_BATCH).
  local PROMOTE_BATCH = 100

  -- Retries whose delay is over go back to the head of their queue; revisits
  -- (attempts 'r': revisit.lua) to its tail, as new items do.
  function promote_due_retries(now)
    if not bound_passed('delayat', now) then return end
    local due = rcall('ZRANGEBYSCORE', K_DELAYED, '-inf', fmt(now), 'LIMIT', 0, PROMOTE_BATCH)
    for _, t in ipairs(due) do
      local rec = rcall('HGET', K_DELAYDATA, t)
      rcall('ZREM', K_DELAYED, t)
      rcall('HDEL', K_DELAYDATA, t)
      if rec then
        local a = sfind(rec, ':', 1, true)
        local b = sfind(rec, ':', a + 1, true)
        local c = sfind(rec, ':', b + 1, true)
        local qid = ssub(rec, 1, a - 1)
        local attempts = ssub(rec, a + 1, b - 1)
        local rlen = tonumber(ssub(rec, b + 1, c - 1))
        local st = qstate(qid)
        st.d = st.d - 1
        mincr('delayed', -1)
        if attempts == 'r' then
          push_tail(qid, st, ssub(rec, c + rlen + 1))
          mincr('queued', 1)
        else
          push_front(qid, st, ssub(rec, c + rlen + 1), tonumber(attempts), ssub(rec, c + 1, c + rlen))
        end
        activate(qid, now)
      end
    end
    reset_bound('delayat', K_DELAYED)
  end

  -- Queues whose slot has come (or comes within `ahead`) leave `sched`, earliest
  -- first, for the round-robin at their fair turn (see above).
  function promote_due_queues(horizon)
    if not bound_passed('schedat', horizon) then return end
    local due = rcall('ZRANGEBYSCORE', K_SCHED, '-inf', fmt(horizon), 'LIMIT', 0, PROMOTE_BATCH)
    if #due == 0 then return reset_bound('schedat', K_SCHED) end
    local turn, gap = mget('turn'), mget('gap')
    local head = rcall('ZRANGE', K_READY, '0', '0', 'WITHSCORES')
    -- (`ready`'s keeper at +inf heads it only when no queue is ready: schedule.lua.)
    local first = head[1] ~= ZSET_KEEPER and tonumber(head[2]) or turn
    for i, qid in ipairs(due) do
      rcall('ZREM', K_SCHED, qid)
      local skipped = gap > 0 and qstate(qid).iv / gap or math.huge
      -- (+ i/1000: queues placed together keep their slots' order. The first
      -- brings the keeper, should `ready` lack it.)
      local at = sformat('%.3f', mmax(turn - skipped, first - 1) + i / 1000)
      if i == 1 then
        rcall('ZADD', K_READY, at, qid, '+inf', ZSET_KEEPER)
      else
        rcall('ZADD', K_READY, at, qid)
      end
    end
    reset_bound('schedat', K_SCHED)
  end
end
