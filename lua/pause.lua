--[[
  pause: no dequeue from a queue for a while (a server asked us to slow down).
  A later pause end wins over an earlier one; a shorter pause never shortens one.

  KEYS: the arena key block (lua/includes/arena.lua).
  ARGV[1]  queue name
  ARGV[2]  pause length in ms from now, by Redis time (0..31536000000)

  Returns the pause end in ms since the epoch (Redis time).
  Errors: WEIR_BAD_ARGS, WEIR_UNKNOWN_QUEUE.
]]
--@include "arena"

argc(2, 'queue ms')
local name = str_arg(1, 'queue name', MAX_NAME_BYTES, false)
local ms = int_arg(2, 'ms', 0, 31536000000)
local qid = qid_of(name)
if not qid then fail('WEIR_UNKNOWN_QUEUE', 'queue ' .. name .. ' does not exist') end
local now = now_us()
local st = qstate(qid)
local untilus = math.max(st.p, now + ms * 1000)
st.p = untilus
qdirty(qid, st)
finish(activate(qid, now))
return fmt(math.floor(untilus / 1000))
