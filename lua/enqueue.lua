--[[
  enqueue: append items to the tails of one or more queues, optionally
  through the arena's dedupe bitmap: a page's links to every domain they
  point at, in one call.

  KEYS: the arena key block (lua/includes/keys.lua).
  ARGV[1]  shards: the caller's shard count of the arena (meta.lua check_shards)
  ARGV[2]  k: bits per item (0 = no dedupe, else 1..MAX_HASHES; needs a configured bitmap),
           or 'b<k>': each item's k bits given as one block (dedupe.lua)
  ARGV[3]  g: number of queues (1..MAX_PER_CALL)
  ARGV[4 .. 3+2g]   g pairs: queue name (must exist: see setLimits), n_i (its item count, >= 1)
  then the items, queue by queue (n = sum of n_i, 1..MAX_PER_CALL; 0..MAX_ITEM_BYTES bytes each)
  then item by item its k bit positions (integers < dedupeSpan, else < dedupeBits;
  a shard's part of a bitmap takes position p at bit p mod dedupeBits), or
  with 'b<k>' its block spec "<block>:<k byte/bit pairs>" (dedupe.lua)

  An item with dedupe is enqueued only if not all of its bits were already
  set; its bits are set in the same step, in item order (dedupe.lua), so
  two producers racing on one item cannot both enqueue it, nor can one
  item twice in one call.
  Returns a string of n characters, '1' for each item enqueued and '0' for
  each dropped by dedupe, in order.
  Errors: WEIR_BAD_ARGS, WEIR_UNKNOWN_QUEUE, WEIR_NO_DEDUPE, WEIR_SCHEMA, WEIR_SHARDS_CHANGED.
]]
--@include "arena"

if #ARGV < 5 then raise('WEIR_BAD_ARGS', 'usage: shards k g (queue n)... items... bits...') end
-- ('b<k>': each item's bits as one block spec, not k positions.)
local blocked = ssub(ARGV[2], 1, 1) == 'b'
if blocked then ARGV[2] = ssub(ARGV[2], 2) end
local k = int_arg(2, 'k', blocked and 1 or 0, MAX_HASHES)
local g = int_arg(3, 'g', 1, MAX_PER_CALL)
if #ARGV < 3 + 2 * g then raise('WEIR_BAD_ARGS', 'expected ' .. g .. ' (queue n) pairs') end

-- The queues and their item counts, all checked before anything is written;
-- their ids in one read, their records with the meta fields (prefetch).
local groups = {}
local names = {}
local n = 0
for i = 1, g do
  names[i] = str_arg(2 + 2 * i, 'queue name', MAX_NAME_BYTES, false)
  groups[i] = { n = int_arg(3 + 2 * i, 'n', 1, MAX_PER_CALL) }
  n = n + groups[i].n
end
local qids = rcall('HMGET', K_QIDS, unpack(names))
for i = 1, g do
  if qids[i] then prefetch(qids[i]) end
end
ensure_schema()
-- (Before a queue is found unknown: a caller with a stale shard count is
-- told so, and re-reads, rather than told the queue is not here.)
check_shards(1)
for i = 1, g do
  if not qids[i] then raise('WEIR_UNKNOWN_QUEUE', 'queue ' .. names[i] .. ' has no limits set; call setLimits first') end
  groups[i].qid = qids[i]
end
if n > MAX_PER_CALL then raise('WEIR_BAD_ARGS', 'more than ' .. MAX_PER_CALL .. ' items in one call') end
local first_item = 4 + 2 * g
local first_bits = first_item + n
argc(first_bits - 1 + (blocked and n or n * k), 'shards k g (queue n)... items... bits...')
for i = first_item, first_bits - 1 do
  if #ARGV[i] > MAX_ITEM_BYTES then raise('WEIR_ITEM_TOO_LARGE', 'item ' .. (i - first_item + 1) .. ' is over ' .. MAX_ITEM_BYTES .. ' bytes') end
end
-- Which items are new (dedupe.lua), their bits set; nil without dedupe.
local fresh = nil
if k > 0 then
  fresh = blocked and dedupe_blocks(first_bits, n, k) or dedupe_positions(first_bits, n, k)
end

local flags = {}
local added = 0
local woke = false
local now = nil
local i = 0
for _, grp in ipairs(groups) do
  local st = qfetch(grp.qid)
  -- Only an empty queue can change place by getting items (schedule.lua's
  -- activate): a queue with items is already where it belongs.
  local was_empty = st.q == 0
  local here = 0
  for _ = 1, grp.n do
    i = i + 1
    if not fresh or fresh[i] then
      push_tail(grp.qid, st, ARGV[first_item + i - 1])
      here = here + 1
      flags[i] = '1'
    else
      flags[i] = '0'
    end
  end
  if here > 0 then
    if was_empty then
      now = now or now_us()
      if activate_parked(grp.qid, now) then woke = true end
    end
    added = added + here
  end
end
if added > 0 then
  mincr('queued', added)
  mincr('enqueued', added)
end
return finish(woke, tconcat(flags))
