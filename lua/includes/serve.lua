--[[
  Serving: items taken from queues by their turn, each as a lease (dequeue.lua
  runs these after the upkeep of promote.lua), and the replay of a resent
  call.

  Ahead. A caller that holds each lease to its slot itself (the crawler's
  pacer does) passes `ahead`: a slot up to that far in the future may be
  served now, with servedAt = the slot, and the queue's next slot is counted
  from that slot, not from whenever the call happened to run. Two servedAt of
  a queue are never less than its interval apart, and a caller that is late
  costs only its own slot, never the pace of the slots after it.

  Send window. A caller that also reports each request as it goes out
  (sent.lua) passes a window: a rate-limited queue served to it (one whose
  interval is over MIN_REPORTED_INTERVAL_MS) is held
  (its next slot `window` later than its rate alone would say) until the
  report comes, which counts the next slot from the report: from the
  request's actual send, whatever delayed it. The serve is the queue's
  pending send (record.lua ss). With no report the hold lapses one interval
  after the window, and the caller sends nothing past the window's end.
]]
--@include "promises"
local replay, serve
-- (The names other files use; the rest stay in the block: see arena.lua.)
do
  -- Turns a call may spend on queues that turn out not to be servable.
  local POP_TRIES = 16
  -- Weight of the newest serve in the arena's pace estimate (meta 'gap': µs between serves).
  local PACE_WEIGHT = 0.05

  -- A lease's index in its call and its attempt count as strings, each
  -- printed once for the library's life: joined with `..` as numbers, each
  -- would be printed as a double ('%.14g', about 1,900 instructions), twice
  -- for every lease served. (At most SMALL_MAX of them kept: every string
  -- the library keeps is more for the collector to mark each cycle.)
  local SMALL, SMALL_MAX = {}, 64
  local function small_s(n)
    local s = SMALL[n]
    if s then return s end
    s = fmt(n)
    if n <= SMALL_MAX then SMALL[n] = s end
    return s
  end

  -- (capped: the queue is left at its in-flight cap with items waiting, so
  -- this lease's commit frees it: see dequeue.lua's reply.)
  -- (The token handed out names the lease's slot, id and queue: leases.lua.)
  -- A lease's eight fields go at the end of the reply itself, one flat list
  -- (dequeue.lua): Redis turns every table of a reply into its own array,
  -- asking each whether it is an error, a status, a double, a map, ..., so
  -- a table per lease costs every commit-and-take instructions for nothing.
  local function lease_reply(out, slot, id, qid, st, item, attempt, expires_ms, served_s)
    local capped = (st.cap > 0 and st.l >= st.cap and st.q > 0) and 1 or 0
    -- (An interval is mostly whole µs, and most often 0: fmt prints those
    -- for a tenth of '%.3f', and 0 needs no printing.)
    local iv = st.iv == 0 and '0' or st.iv % 1 == 0 and fmt(st.iv) or sformat('%.3f', st.iv)
    local n = #out
    out[n + 1], out[n + 2], out[n + 3], out[n + 4] = token_of(slot, id, qid), st.name, item, attempt
    out[n + 5], out[n + 6], out[n + 7], out[n + 8] = expires_ms, served_s, iv, capped
  end

  -- The same call again (a client resending after a lost reply, as ioredis
  -- does after a reconnect): the leases this token base was given and still
  -- holds, instead of serving more; nil when the base is new. The original
  -- call put them first in the slots its commits freed, in order, then in
  -- slots of their own ("<base>.<i>"). Their serve time: now for a queue
  -- without a rate; for a rate-limited one its pending send's serve, or the
  -- slot its last serve was given (its next slot less one interval), if
  -- later than now: a slot served ahead is never given as earlier than it
  -- was (the caller would act before it), at worst as later.
  function replay(now, now_s, base, parsed, count)
    local mine = base .. '.'
    local again = { 0, '', now_s, '', -1 }
    local n = 0
    local function add(slot, rec)
      local qid, attempt, item, exp, id = parse_lease(rec)
      local st = qstate(qid)
      local served_s = now_s
      if st.iv > 0 then
        local slot_at = st.ss > 0 and st.ss or st.nx - mfloor(st.iv)
        if slot_at > now then served_s = fmt(slot_at) end
      end
      lease_reply(again, slot, id or slot, qid, st, item, attempt, fmt(mfloor(exp / 1000)), served_s)
      n = n + 1
    end
    for _, p in ipairs(parsed) do
      local rec = lease_get(p[1])
      if rec then
        local _, _, _, id = lease_parts(rec)
        if id and ssub(id, 1, #mine) == mine then add(p[1], rec) end
      end
    end
    for i = n + 1, count do
      local rec = lease_get(mine .. i)
      if not rec then break end
      add(mine .. i, rec)
    end
    if n == 0 then return nil end
    return again
  end

  -- The arena's pace after `served` more serves at `now`: a moving average of
  -- the µs between serves (an idle spell counts as at most a second), kept in
  -- meta ('gap', 'lastserve') for the fair-share test (promote.lua).
  local function paced(gap, last, now, served)
    -- (A clock stepped back counts as no time.)
    local g = mmax(0, mmin(now - last, 1000000)) / served
    if last == 0 then return g end
    return gap + PACE_WEIGHT * (g - gap)
  end

  -- Politeness: the next serve of a queue is one interval after this one; the
  -- interval's fraction of a µs is carried to the next. (For an unlimited
  -- queue nx is the last serve: a later, lower rate starts from it.)
  local function advance(st, served)
    local whole = mfloor(st.iv)
    st.c = st.c + (st.iv - whole)
    if st.c >= 1 then
      whole = whole + 1
      st.c = st.c - 1
    end
    st.nx = served + whole
  end

  -- A spare lease's queue: the head of the round-robin when it has no rate,
  -- is due now, claimed by no promise and has places to spare below its
  -- in-flight cap; else nil, the head left in its place. A rate-limited slot
  -- is never a spare (a caller may hold a spare a while before acting on it,
  -- and a slot is only good at its time), nor a cap's last place (a spare
  -- waiting for a lane would keep a fetch from going).
  local function next_spare(now)
    local top = rcall('ZPOPMIN', K_READY)
    if not top[1] then return nil end
    -- (`ready`'s keeper comes off only when no queue is left: it goes back.)
    if top[1] == ZSET_KEEPER then
      rcall('ZADD', K_READY, '+inf', ZSET_KEEPER)
      return nil
    end
    local st = qfetch(top[1])
    if st.iv == 0 and st.cl <= now and (st.cap == 0 or st.l + 1 < st.cap) and servable(st, now) then return top[1] end
    rcall('ZADD', K_READY, top[2], top[1])
    return nil
  end

  -- Serves up to `count` items, one per turn, then up to `spare` more while
  -- the round-robin's next queue has no rate (next_spare): a caller with
  -- several lanes keeps those for its next lanes, one call for several pages.
  -- Spares are looked for only after every lease asked for was served and
  -- the last from a queue without a rate, so an arena of rate-limited queues
  -- pays nothing for them. Queue records are cached for the call (a batch may
  -- serve one queue many times) and written once by flush(); arena counters
  -- and the turn counter are summed and written once. The leases go at the
  -- end of `out` (lease_reply); a serve at the call's time is given as
  -- now_s, `now` as the call printed it. window: µs, see "Send window". Returns how many, and the record of
  -- the queue the last serve put back into `ready` (nil if it did not).
  function serve(out, now, now_s, horizon, base, count, spare, lease_ms, promised, window)
    local leased = 0
    local passed = {}
    local last_back = nil
    local turn = mget('turn')
    local expires = now + lease_ms * 1000
    local expires_s, expires_ms = fmt(expires), fmt(mfloor(expires / 1000))
    local taken = 0
    for _ = 1, count + spare + POP_TRIES do
      local qid
      if leased < count then
        qid = next_queue(now, passed, promised)
        promised = ''
      elseif leased < count + spare and last_back and last_back.iv == 0 then
        qid = next_spare(now)
      end
      if not qid then break end
      local st = qstate(qid)
      if servable(st, horizon) then
        -- Its slot, or now if that has passed: a late call never moves a slot earlier.
        local served = mmax(now, due_at(st))
        local item, attempts = take_head(qid, st)
        st.cl = 0
        taken = taken + 1
        -- Every serve is a turn, wherever its queue goes next (promote.lua).
        turn = turn + 1
        -- (A missing item only follows outside tampering: it is skipped, counts kept right.)
        if item then
          st.l = st.l + 1
          -- A slot this call's commits freed, else one of its own (leases.lua).
          local id = base .. '.' .. small_s(leased + 1)
          local slot = take_slot() or id
          lease_put(slot, lease_record(id, qid, small_s(attempts + 1), expires_s, item))
          lease_expiry(slot, expires, expires_s)
          advance(st, served)
          -- A send the caller will report: the next slot waits for it (see "Send window").
          if window > 0 and st.iv > MIN_REPORTED_INTERVAL_MS * 1000 then
            st.ss = served
            st.nx = st.nx + window
          end
          lease_reply(out, slot, id, qid, st, item, attempts + 1, expires_ms, served == now and now_s or fmt(served))
          leased = leased + 1
        end
        -- Back into the schedule: the tail of the round-robin, or `sched` at its next time.
        last_back = nil
        if schedulable(st) then
          if due_at(st) <= horizon then
            -- (Printed here as an integer: a number argument is printed as a double, '%.17g'.)
            rcall('ZADD', K_READY, fmt(turn), qid)
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
      rcall('ZADD', K_READY, top[2], top[1])
    end
    if taken > 0 then
      mset('gap', paced(mget('gap'), mget('lastserve'), now, taken))
      mset('lastserve', now)
      mincr('queued', -taken)
      mincr('leased', leased)
    end
    if mget('turn') ~= turn then
      mset('turn', turn)
    end
    return leased, last_back
  end
end
