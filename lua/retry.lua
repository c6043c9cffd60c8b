--[[
  retry: the work failed for now; try the item again later.

  KEYS: the arena key block (lua/includes/keys.lua).
  ARGV[1]  lease token
  ARGV[2]  delay in ms before the item may be served again (0..MAX_DELAY_MS);
           0 puts it straight back at the head of its queue
  ARGV[3]  reason (0..MAX_REASON_BYTES bytes), kept as the item's last reason
  ARGV[4]  '1' when this delivery counts as an attempt, '0' when it does not
           (a server's Retry-After is pacing, not the item's fault)
  ARGV[5]  optional: the item to requeue in place of the leased one (0..MAX_ITEM_BYTES
           bytes), so a caller can carry state across retries (a pacing count, say)

  An item whose counted attempts reach the arena's maxAttempts goes to the
  dead letter with this reason instead.
  Returns 1 (requeued or delayed), 2 (dead-lettered), or 0 when the lease is stale.
]]
--@include "arena"

if #ARGV ~= 4 and #ARGV ~= 5 then raise('WEIR_BAD_ARGS', 'expected 4 or 5 arguments (token delayMs reason countAttempt [item]), got ' .. #ARGV) end
local token = str_arg(1, 'token', MAX_TOKEN_BYTES, false)
local delay_ms = int_arg(2, 'delayMs', 0, MAX_DELAY_MS)
local reason = str_arg(3, 'reason', MAX_REASON_BYTES, true)
if ARGV[4] ~= '0' and ARGV[4] ~= '1' then raise('WEIR_BAD_ARGS', 'countAttempt must be 0 or 1') end
local replacement = nil
if #ARGV == 5 then
  replacement = ARGV[5]
  if #replacement > MAX_ITEM_BYTES then raise('WEIR_ITEM_TOO_LARGE', 'item is over ' .. MAX_ITEM_BYTES .. ' bytes') end
end
local now = now_us()
local qid, attempt, item, id = end_lease(token, now)
if replacement then item = replacement end
if not qid then return finish(false, 0) end
local attempts = attempt
if ARGV[4] == '0' then attempts = attempt - 1 end
local dead = attempts >= max_attempts()
requeue(id, qid, item, attempts, reason, delay_ms * 1000, now)
local woke = activate(qid, now) or delay_ms > 0
if dead then return finish(woke, 2) end
return finish(woke, 1)
