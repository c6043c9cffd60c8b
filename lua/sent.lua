--[[
  sent: a caller that took a lease of a rate-limited queue with a send
  window (dequeue ARGV[9]) reports its request: written (ARGV[3] '1'), or
  never to be sent ('0'). The queue's next slot, held since the serve
  (serve.lua "Send window"), is set from this call's own clock: one
  interval, plus the margin, after now. The request went out before this
  call ran, so the next request of the queue follows it by at least that,
  whatever delayed it (a stall before its write, a slow connect) and
  whichever worker sends next. A request never sent frees the next slot at
  the time its rate alone gives.

  A caller whose request has not gone yet but will (its connection still
  being made) says so ('w') before its window ends: the hold then lasts a
  window from now instead, so a live caller is never cut off while a dead
  one holds its queue up for one window at most.

  KEYS: the arena key block (lua/includes/keys.lua).
  ARGV[1]  queue name
  ARGV[2]  the lease's servedAt, µs (its reply's servedAtUs)
  ARGV[3]  '1' sent, '0' not sent, 'w' not yet (still to be sent)
  ARGV[4]  µs: after a send, the margin added to the interval
           (0..MAX_AHEAD_MS*1000); with 'w', the window from now
           (1..MAX_LEASE_MS*1000)

  Returns 1, or 0 when the queue was not waiting for this lease's report
  (its window had lapsed and the queue was served since, or a report came
  already): nothing changed.
  Errors: WEIR_BAD_ARGS.
]]
--@include "arena"

argc(4, 'queue servedAtUs sent marginUs')
local name = str_arg(1, 'queue name', MAX_NAME_BYTES, false)
local served = int_arg(2, 'servedAtUs', 0, NEVER)
local what = ARGV[3]
if what ~= '1' and what ~= '0' and what ~= 'w' then raise('WEIR_BAD_ARGS', "sent must be '1', '0' or 'w', got " .. tostring(what)) end
local us = what == 'w' and int_arg(4, 'windowUs', 1, MAX_LEASE_MS * 1000) or int_arg(4, 'marginUs', 0, MAX_AHEAD_MS * 1000)
local qid = qid_of(name)
if not qid then return 0 end
-- (The record comes with the meta fields, which placing the queue reads: one HMGET.)
prefetch_field(qid)
meta()
local st = qstate(qid)
-- (servedAt comes back from the client through a double of ms: within a µs or two.)
if st.ss == 0 or mmax(st.ss - served, served - st.ss) > 2 then return 0 end
local now = now_us()
if what == 'w' then
  -- Still pending: held a window from now (never less than it was).
  st.nx = mmax(st.nx, mfloor(now + us + st.iv) + 1)
  qdirty(qid, st)
  return finish(activate(qid, now), 1)
end
if what == '1' then
  st.nx = mfloor(now + st.iv + us) + 1
else
  st.nx = mfloor(st.ss + st.iv) + 1
end
st.ss = 0
slot_moved_earlier(st)
qdirty(qid, st)
return finish(activate(qid, now), 1)
