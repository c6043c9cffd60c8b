--[[
  commit: the work of one or more leases is done; their items are gone for good.

  KEYS: the arena key block (lua/includes/keys.lua).
  ARGV[1..n]  lease tokens (1..MAX_PER_CALL of them)

  Returns a list with, per token, 1 (committed) or 0 (stale: expired, or
  ended by another call; nothing else changes for it, and an expired lease
  that had not yet gone back goes back now, exactly once).
]]
--@include "arena"

if #ARGV < 1 or #ARGV > MAX_PER_CALL then raise('WEIR_BAD_ARGS', 'expected 1..' .. MAX_PER_CALL .. ' lease tokens, got ' .. #ARGV) end
for i = 1, #ARGV do str_arg(i, 'token', 64, false) end
local now = now_us()
local out = {}
local per_queue = {}
local order = {}
local done = 0
for i = 1, #ARGV do
  local token = ARGV[i]
  local rec = current_lease(token, now)
  if rec then
    local qid = parse_lease(rec)
    redis.call('HDEL', K_LEASES, token)
    redis.call('ZREM', K_LEXP, token)
    if not per_queue[qid] then
      per_queue[qid] = 0
      order[#order + 1] = qid
    end
    per_queue[qid] = per_queue[qid] + 1
    done = done + 1
    out[i] = 1
  else
    out[i] = 0
  end
end
-- Per-queue counters once per queue in the batch, not once per lease.
local woke = false
for _, qid in ipairs(order) do
  local n = per_queue[qid]
  local st = qstate(qid)
  local was_capped = st.cap > 0 and st.l >= st.cap
  st.l = st.l - n
  st.done = st.done + n
  qdirty(qid, st)
  -- Only the in-flight cap depends on leases: a queue below it is placed already.
  if was_capped then
    if activate(qid, now) then woke = true end
  end
end
flush()
if done > 0 then
  redis.call('HINCRBY', K_META, 'leased', -done)
  redis.call('HINCRBY', K_META, 'done', done)
end
if woke then signal() end
return out
