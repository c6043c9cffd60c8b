--[[
  release: hand a lease back unfinished (graceful shutdown). The item goes
  back to the head of its queue and this delivery does not count as an attempt.

  KEYS: the arena key block (lua/includes/keys.lua).
  ARGV[1]  lease token

  Returns 1, or 0 when the lease is stale.
]]
--@include "arena"

argc(1, 'token')
local token = str_arg(1, 'token', MAX_TOKEN_BYTES, false)
local now = now_us()
local qid, attempt, item = end_lease(token, now)
if not qid then return finish(false, 0) end
push_front(qid, qstate(qid), item, attempt - 1, '')
return finish(activate(qid, now), 1)
