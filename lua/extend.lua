--[[
  extend: keep a lease for longer (a slow job heartbeats with this).

  KEYS: the arena key block (lua/includes/arena.lua).
  ARGV[1]  lease token
  ARGV[2]  new lease duration in ms from now (1..86400000)

  Returns the new expiry in ms since the epoch (Redis time), or 0 when the
  lease is stale.
]]
--@include "arena"

argc(2, 'token ms')
local token = str_arg(1, 'token', 64, false)
local ms = int_arg(2, 'ms', 1, 86400000)
local now = now_us()
if not current_lease(token, now) then return 0 end
local expires = now + ms * 1000
redis.call('ZADD', K_LEXP, fmt(expires), token)
return fmt(math.floor(expires / 1000))
