--[[
  revisit: the work of a lease is done, and its item is to be done again
  later: it is counted done (as commit.lua counts) and comes back to its
  queue after the delay, at the tail like a new item (a retry goes to the
  head), with no attempts. While it waits it counts as delayed, so an arena
  with revisits to come is not drained.

  KEYS: the arena key block (lua/includes/keys.lua).
  ARGV[1]  lease token
  ARGV[2]  delay in ms before the item joins its queue again (1..MAX_DELAY_MS)
  ARGV[3]  optional: the item to bring back in place of the leased one
           (0..MAX_ITEM_BYTES bytes): what the caller learnt this time

  Returns 1, or 0 when the lease is stale (nothing changes then).
]]
--@include "arena"

if #ARGV ~= 2 and #ARGV ~= 3 then raise('WEIR_BAD_ARGS', 'expected 2 or 3 arguments (token delayMs [item]), got ' .. #ARGV) end
local token = str_arg(1, 'token', MAX_TOKEN_BYTES, false)
local delay_ms = int_arg(2, 'delayMs', 1, MAX_DELAY_MS)
local replacement = ARGV[3]
if replacement and #replacement > MAX_ITEM_BYTES then raise('WEIR_ITEM_TOO_LARGE', 'item is over ' .. MAX_ITEM_BYTES .. ' bytes') end
local now = now_us()
local qid, _, item, id = end_lease(token, now)
if not qid then return finish(false, 0) end
local st = qstate(qid)
st.done = st.done + 1
qdirty(qid, st)
mincr('done', 1)
delay_item(id, qid, replacement or item, 'r', '', now + delay_ms * 1000)
-- (A queue at its in-flight cap may take its next item now; a waiting caller
-- is woken for the revisit's time.)
return finish(activate(qid, now) or true, 1)
