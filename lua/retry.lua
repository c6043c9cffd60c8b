--[[
  retry: the work failed for now; try the item again later.

  KEYS: the arena key block (lua/includes/keys.lua).
  ARGV[1]  lease token
  ARGV[2]  delay in ms before the item may be served again (0..MAX_DELAY_MS);
           0 puts it straight back at the head of its queue
  ARGV[3]  reason (0..MAX_REASON_BYTES bytes), kept as the item's last reason
  ARGV[4]  '1' when this delivery counts as an attempt, '0' when it does not
           (a server's Retry-After is pacing, not the item's fault)

  An item whose counted attempts reach the arena's maxAttempts goes to the
  dead letter with this reason instead.
  Returns 1 (requeued or delayed), 2 (dead-lettered), or 0 when the lease is stale.
]]
--@include "arena"

argc(4, 'token delayMs reason countAttempt')
local token = str_arg(1, 'token', 64, false)
local delay_ms = int_arg(2, 'delayMs', 0, MAX_DELAY_MS)
local reason = str_arg(3, 'reason', MAX_REASON_BYTES, true)
if ARGV[4] ~= '0' and ARGV[4] ~= '1' then raise('WEIR_BAD_ARGS', 'countAttempt must be 0 or 1') end
local now = now_us()
local qid, attempt, item = end_lease(token, now)
if not qid then return finish(false, 0) end
local attempts = attempt
if ARGV[4] == '0' then attempts = attempt - 1 end
local dead = attempts >= max_attempts()
requeue(token, qid, item, attempts, reason, delay_ms * 1000, now)
local woke = activate(qid, now) or delay_ms > 0
if dead then return finish(woke, 2) end
return finish(woke, 1)
