--[[
  fail: the item can never succeed; move it straight to the dead letter.

  KEYS: the arena key block (lua/includes/keys.lua).
  ARGV[1]  lease token
  ARGV[2]  reason (0..MAX_REASON_BYTES bytes)

  Returns 1, or 0 when the lease is stale.
]]
--@include "arena"

argc(2, 'token reason')
local token = str_arg(1, 'token', MAX_TOKEN_BYTES, false)
local reason = str_arg(2, 'reason', MAX_REASON_BYTES, true)
local now = now_us()
local qid, attempt, item = end_lease(token, now)
if not qid then return finish(false, 0) end
to_dead(qid, item, attempt, reason, now)
return finish(activate(qid, now), 1)
