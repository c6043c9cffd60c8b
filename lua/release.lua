--[[
  release: hand a lease back unfinished (graceful shutdown). The item goes
  back to the head of its queue and this delivery does not count as an attempt.

  KEYS: the arena key block (lua/includes/arena.lua).
  ARGV[1]  lease token

  Returns 1, or 0 when the lease is stale.
]]
--@include "arena"

argc(1, 'token')
local token = str_arg(1, 'token', 64, false)
local now = now_us()
local rec = current_lease(token, now)
if not rec then
  qflush()
  return 0
end
local qid, attempt, item = parse_lease(rec)
drop_lease(token, qid)
push_front(qid, qstate(qid), item, attempt - 1, '')
local woke = activate(qid, now)
qflush()
if woke then signal() end
return 1
