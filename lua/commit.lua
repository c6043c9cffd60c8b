--[[
  commit: the work of one or more leases is done; their items are gone for good.
  (A worker that dequeues next passes its tokens to dequeue instead: one call.)

  KEYS: the arena key block (lua/includes/keys.lua).
  ARGV[1..n]  lease tokens (1..MAX_PER_CALL of them)

  Returns a list with, per token, 1 (committed) or 0 (stale: expired, or
  ended by another call; nothing else changes for it, and an expired lease
  that had not yet gone back goes back now, exactly once).
]]
--@include "arena"

if #ARGV < 1 or #ARGV > MAX_PER_CALL then raise('WEIR_BAD_ARGS', 'expected 1..' .. MAX_PER_CALL .. ' lease tokens, got ' .. #ARGV) end
for i = 1, #ARGV do str_arg(i, 'token', MAX_TOKEN_BYTES, false) end
local out, woke, reaped = commit_leases(prefetch_leases(ARGV, false), now_us())
return finish(woke or reaped, out)
