--[[
  extend: keep a lease for longer (a slow job heartbeats with this).

  KEYS: the arena key block (lua/includes/keys.lua).
  ARGV[1]  lease token
  ARGV[2]  new lease duration in ms from now (1..MAX_LEASE_MS)

  Returns the new expiry in ms since the epoch (Redis time), or 0 when the
  lease is stale.
]]
--@include "arena"

argc(2, 'token ms')
local token = str_arg(1, 'token', MAX_TOKEN_BYTES, false)
local ms = int_arg(2, 'ms', 1, MAX_LEASE_MS)
local now = now_us()
local slot, id = lease_token(token)
prefetch_field(slot)
local rec = current_lease(slot, id, now)
if not rec then
  flush()
  return 0
end
local qid, attempt, item = parse_lease(rec)
local expires = now + ms * 1000
lease_expiry(slot, expires)
lease_put(slot, lease_record(id, qid, attempt, fmt(expires), item))
flush()
return fmt(mfloor(expires / 1000))
