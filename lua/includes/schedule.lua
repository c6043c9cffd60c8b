--[[
  The schedule: `sched` (when a queue may next be served) apart from `ready`
  (which eligible queue goes first, round-robin by turn number), and the
  wake list that tells idle callers there may be work.
]]
--@include "record"
local ZSET_KEEPER, signal, sched_add, schedulable, due_at, servable, activate_parked, ready_flush, activate
-- (The names other files use; the rest stay in the block: see arena.lua.)
do
  -- The keeper of `ready` and of `sched`: a member at +inf, longer than
  -- zset-max-listpack-value, so Redis keeps each a skiplist from its first
  -- member on (and the key never empties, so never turns back). As a
  -- listpack of up to 128 queues (a crawl of 100 domains), every return of a
  -- served queue to the tail of `ready` read every score before it, and each
  -- pop moved the rest (the keeper cut a 100-domain crawl's Redis
  -- instructions a page by 4.5 %); every domain's next slot went into
  -- `sched` likewise (its keeper: 7.7 % more at 2/s; docs/scaling.md). It is no queue (a qid is digits): the readers of
  -- `ready` pass over it (promises.lua, promote.lua, serve.lua, stats.lua,
  -- dequeue.lua), those of `sched` read up to a time or a count
  -- (promises.lua drops it), and it goes in with the adds that make a queue
  -- ready, and with an add to a `sched` its bound calls empty, so an arena
  -- cleared, or written by an older release, gets it back.
  ZSET_KEEPER = 'weir:keeps-ready-and-sched-skiplists:a-member-longer-than-zset-max-listpack-value'

  -- One wake token at most: an idle worker blocked on `wake` learns there may
  -- be work; a stale token costs one empty dequeue, never a lost item.
  function signal()
    if rcall('LLEN', K_WAKE) == 0 then
      rcall('RPUSH', K_WAKE, '1')
    end
  end

  -- A queue into `sched` at `at` µs (its due time), the bound kept (meta.lua).
  -- (The keeper comes along when the bound says `sched` is empty: the key may
  -- be gone. Not on every add: with it there, it stays, as nothing pops
  -- `sched` and removals are by name.) Returns ZADD's count of members new
  -- to `sched`: 0 when the queue was in it (with the keeper, 1 or 2 either
  -- way, but then the bound said `sched` was empty).
  function sched_add(qid, at)
    local added
    if mget('schedat') == NEVER then
      added = rcall('ZADD', K_SCHED, fmt(at), qid, '+inf', ZSET_KEEPER)
    else
      added = rcall('ZADD', K_SCHED, fmt(at), qid)
    end
    lower_bound('schedat', at)
    return added
  end

  -- A queue out of `sched` (skipped when the bound says `sched` is empty: meta.lua).
  local function sched_rem(qid)
    if mget('schedat') ~= NEVER then rcall('ZREM', K_SCHED, qid) end
  end

  -- Has items and room under its in-flight cap, and is not held: it belongs in
  -- `ready` or `sched` (which one, its time decides).
  function schedulable(st)
    return st.q > 0 and st.hold ~= 1 and (st.cap == 0 or st.l < st.cap)
  end

  -- When it may next be served: its rate's next allowed time or the end of a pause.
  function due_at(st)
    return mmax(st.nx, st.p)
  end

  -- May it be served at `now`?
  function servable(st, now)
    return schedulable(st) and due_at(st) <= now
  end

  -- Puts a queue known to be parked (in neither set) where it belongs: one
  -- that was empty before its items came, or at its in-flight cap before a
  -- commit, skips the look for it in `ready` (a ZREM a page); activate()
  -- below is this and that look. Were the queue
  -- somehow in `sched` still, it would be in both sets for a while: served
  -- from `ready` only once servable() says its slot has come, so never
  -- before its rate allows. Returns true when it may let an idle worker do
  -- something sooner (so callers signal), and, for a queue put in `sched`,
  -- sched_add's count (0: it was there). With `ready_adds` (a caller that
  -- reads `ready` no more this call: enqueue), a queue due now is appended
  -- to it as (turn, qid) for one ZADD of them all (ready_flush), not a
  -- command a queue: a kickoff batch makes thousands of queues a call.
  function activate_parked(qid, now, ready_adds)
    local st = qstate(qid)
    if not schedulable(st) then return false end
    local at = due_at(st)
    if at <= now then
      local turn = fmt(mincr('turn', 1))
      if ready_adds then
        ready_adds[#ready_adds + 1] = turn
        ready_adds[#ready_adds + 1] = qid
      else
        rcall('ZADD', K_READY, turn, qid, '+inf', ZSET_KEEPER)
      end
      return true
    end
    local first = earliest(K_SCHED)
    local added = sched_add(qid, at)
    return first == nil or at < first, added
  end

  -- The (turn, qid) pairs activate_parked appended to `ready_adds`, into
  -- `ready` (an enqueue's up to 1,000 queues: one command).
  function ready_flush(ready_adds)
    if #ready_adds == 0 then return end
    ready_adds[#ready_adds + 1] = '+inf'
    ready_adds[#ready_adds + 1] = ZSET_KEEPER
    for i = 1, #ready_adds, 2000 do
      rcall('ZADD', K_READY, unpack(ready_adds, i, mmin(i + 1999, #ready_adds)))
    end
  end

  -- Puts a queue where it belongs: `ready` if it may be served now, `sched` at
  -- the time it may be, or in neither (parked) when it is empty, held or at its
  -- in-flight cap. Every change to those inputs calls this, so the two sets
  -- stay exact and dequeue never has to scan for work. Returns true when the
  -- change may let an idle worker do something sooner (so callers signal):
  -- not when it was in `ready` already, or in `sched` at the same time.
  function activate(qid, now)
    local st = qstate(qid)
    if not schedulable(st) then
      rcall('ZREM', K_READY, qid)
      sched_rem(qid)
      return false
    end
    if due_at(st) <= now then
      if rcall('ZSCORE', K_READY, qid) then return false end
      sched_rem(qid)
      return activate_parked(qid, now)
    end
    -- (Placed in `sched` first: a queue is in one set at most, so only one
    -- that was not in `sched` (ZADD's count) may be in `ready`. A send
    -- report finds its queue in `sched`, held there by its send window. The
    -- signal needs no old score: a slot earlier than every slot before it
    -- is earlier than the queue's own.)
    local signal, added = activate_parked(qid, now)
    if added ~= 0 then rcall('ZREM', K_READY, qid) end
    return signal
  end
end
