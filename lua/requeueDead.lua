--[[
  requeueDead: move the oldest dead-lettered items back to the tail of their
  queues with a fresh attempt count. Dedupe is bypassed: these items were
  seen before on purpose.

  KEYS: the arena key block (lua/includes/keys.lua).
  ARGV[1]  count (1..MAX_PER_CALL)

  Returns the number of items requeued.
]]
--@include "arena"

argc(1, 'count')
local count = int_arg(1, 'count', 1, MAX_PER_CALL)
local now = now_us()
local moved = 0
local woke = false
for _ = 1, count do
  local rec = rcall('LPOP', K_DEAD)
  if not rec then break end
  local d = cjson.decode(rec)
  mincr('dead', -1)
  local qid = qid_of(d.queue)
  if qid then
    local st = qstate(qid)
    st.dead = st.dead - 1
    push_tail(qid, st, d.item)
    mincr('queued', 1)
    if activate(qid, now) then woke = true end
    moved = moved + 1
  end
end
flush()
if woke then signal() end
return moved
