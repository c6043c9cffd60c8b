--[[
  commit: the work of a lease is done; the item is gone for good.

  KEYS: the arena key block (lua/includes/arena.lua).
  ARGV[1]  lease token

  Returns 1, or 0 when the lease is stale (expired, or ended by another
  call): then nothing else changes, and an expired lease that had not yet
  gone back goes back now, exactly once.
]]
--@include "arena"

argc(1, 'token')
local token = str_arg(1, 'token', 64, false)
local now = now_us()
local rec = current_lease(token, now)
if not rec then return 0 end
local qid = parse_lease(rec)
drop_lease(token, qid)
qincr(qid, 'done', 1)
mincr('done', 1)
if activate(qid, now) then signal() end
return 1
