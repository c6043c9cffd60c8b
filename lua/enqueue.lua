--[[
  enqueue: append items to the tails of one or more queues, optionally
  through the arena's dedupe bitmap: a page's links to every domain they
  point at, in one call.

  KEYS: the arena key block (lua/includes/keys.lua).
  ARGV[1]  shards: the caller's shard count of the arena (meta.lua check_shards)
  ARGV[2]  k: bit positions per item (0 = no dedupe, else 1..MAX_HASHES; needs a
           configured bitmap), written 'b<k>' when they come in block form (below)
  ARGV[3]  g: number of queues (1..MAX_PER_CALL)
  ARGV[4 .. 3+2g]   g pairs: queue name (must exist: see setLimits, unless
           created here), n_i (its item count, >= 1)
  then the items, queue by queue (n = sum of n_i, 1..MAX_PER_CALL; 0..MAX_ITEM_BYTES bytes each)
  then item by item its k bit positions (integers < dedupeSpan, else < dedupeBits;
  a shard's part of a bitmap takes position p at bit p mod dedupeBits); in
  block form (k written 'b<k>': a blocked Bloom filter's, all of an item's
  bits in one 512-bit block) one argument an item instead, struct
  '>I4' the block b and k '>H' offsets o < 512 in it, the positions b * 512 + o
  then, optionally, in any order:
    'creates' then g pairs rate maxInFlight, one a group: the limits
      ('unlimited' or requests per second; 0..MAX_IN_FLIGHT) its queue is
      created with if not yet known (as setLimits would), here, in the same
      step as its first items: two callers meeting a new queue at once
      create it once, and a queue that exists keeps its own limits. A rate
      of '' is none: that group's queue must exist. Each group has its own,
      so queues of different limits share one call (a page's links to many
      listed domains). Without them an unknown queue is an error.
    'lower' (with 'creates'): a queue that exists tightens to its group's
      limits where they are stricter (record.lua qlower), so a queue that
      several sites share keeps the strictest of them
    'front': the items go to the queue's front band (items.lua's front
      stack, where leases put back go): served before every item at its
      tail, the call's first item first (across calls, the last call's first).

  An item with dedupe is enqueued only if not all of its bits were already
  set; its bits are set in the same step (lua/includes/dedupe.lua), so two
  producers racing on one item cannot both enqueue it, nor can one item
  twice in one call.
  Returns a string of n characters, '1' for each item enqueued and '0' for
  each dropped by dedupe, in order.
  Errors: WEIR_BAD_ARGS, WEIR_BAD_RATE, WEIR_UNKNOWN_QUEUE, WEIR_NO_DEDUPE, WEIR_SCHEMA, WEIR_SHARDS_CHANGED.
]]
--@include "arena"

if #ARGV < 5 then raise('WEIR_BAD_ARGS', 'usage: shards k g (queue n)... items... positions...') end
-- (Block form: k written 'b<k>', one argument an item for its positions.)
local blocked = ssub(ARGV[2] or '', 1, 1) == 'b'
if blocked then ARGV[2] = ssub(ARGV[2], 2) end
local k = int_arg(2, 'k', blocked and 1 or 0, MAX_HASHES)
local g = int_arg(3, 'g', 1, MAX_PER_CALL)
if #ARGV < 3 + 2 * g then raise('WEIR_BAD_ARGS', 'expected ' .. g .. ' (queue n) pairs') end

-- The queues and their item counts, all checked before anything is written;
-- their ids in one read, their records with the meta fields (prefetch).
-- (Parallel arrays, a group's place in each, not a table a group: a
-- kickoff's call is a thousand groups of one URL each.)
local names, counts, limits = {}, {}, {}
local n = 0
for i = 1, g do
  -- (str_arg and int_arg where the common case is not plainly good:
  -- a name of 1..MAX_NAME_BYTES bytes, a count of one.)
  local name = ARGV[2 + 2 * i]
  if name == nil or #name == 0 or #name > MAX_NAME_BYTES then str_arg(2 + 2 * i, 'queue name', MAX_NAME_BYTES, false) end
  names[i] = name
  local c = ARGV[3 + 2 * i] == '1' and 1 or int_arg(3 + 2 * i, 'n', 1, MAX_PER_CALL)
  counts[i] = c
  n = n + c
end
local qids = rcall('HMGET', K_QIDS, unpack(names))
for i = 1, g do
  local qid = qids[i]
  if qid then
    -- (A queue id is a number: what else the index holds is its keeper,
    -- under a name with a NUL byte that no queue can have, record.lua.)
    if #qid > 20 then raise('WEIR_BAD_ARGS', 'queue name must not hold a NUL byte') end
    prefetch(qid)
  end
end
ensure_schema()
-- (Before a queue is found unknown: a caller with a stale shard count is
-- told so, and re-reads, rather than told the queue is not here.)
check_shards(1)
if n > MAX_PER_CALL then raise('WEIR_BAD_ARGS', 'more than ' .. MAX_PER_CALL .. ' items in one call') end
local first_item = 4 + 2 * g
local first_pos = first_item + n
local last_pos = first_pos - 1 + (blocked and n or n * k)
-- The options: where the groups' limits for unknown queues begin, and the band.
local creates, front, lower = nil, false, false
local usage = "shards k g (queue n)... items... positions... ['creates' (rate maxInFlight)...] ['lower'] ['front']"
if #ARGV < last_pos then argc(last_pos, usage) end
local at = last_pos + 1
while at <= #ARGV do
  local opt = ARGV[at]
  if opt == 'creates' and at + 2 * g <= #ARGV and not creates then
    creates = at + 1
    at = at + 1 + 2 * g
  elseif opt == 'front' then
    front = true
    at = at + 1
  elseif opt == 'lower' then
    lower = true
    at = at + 1
  else
    raise('WEIR_BAD_ARGS', 'unknown option ' .. tostring(opt) .. ' after the positions (' .. usage .. ')')
  end
end
if lower and not creates then raise('WEIR_BAD_ARGS', "'lower' needs 'creates' (" .. usage .. ')') end
-- A group's limits, checked where they may be used: its queue is unknown,
-- or 'lower' may tighten it. (A rate of '' is none.)
-- (Groups of the same limits share one, checked once: a kickoff's batch
-- is most often a thousand new queues of one or a few limits.)
local limits_seen = {}
local function create_of(i)
  local a = creates and creates + 2 * (i - 1)
  if not a or ARGV[a] == '' then return nil end
  local rate_s, cap_s = ARGV[a], ARGV[a + 1]
  local by_cap = limits_seen[rate_s]
  local c = by_cap and by_cap[cap_s]
  if c then return c end
  c = { rate_s = rate_s, iv = rate_interval(rate_s, 'created on enqueue'), cap = int_arg(a + 1, 'maxInFlight', 0, MAX_IN_FLIGHT) }
  if not by_cap then
    by_cap = {}
    limits_seen[rate_s] = by_cap
  end
  by_cap[cap_s] = c
  return c
end
for i = 1, g do
  if not qids[i] or lower then limits[i] = create_of(i) end
  if not qids[i] then
    if not limits[i] then raise('WEIR_UNKNOWN_QUEUE', 'queue ' .. names[i] .. ' has no limits set; call setLimits first') end
    if sfind(names[i], '\0', 1, true) then raise('WEIR_BAD_ARGS', 'queue name must not hold a NUL byte') end
  end
end
for i = first_item, first_pos - 1 do
  if #ARGV[i] > MAX_ITEM_BYTES then raise('WEIR_ITEM_TOO_LARGE', 'item ' .. (i - first_item + 1) .. ' is over ' .. MAX_ITEM_BYTES .. ' bytes') end
end
-- The dedupe bits (dedupe.lua): every position checked before anything is
-- written, then tested and set; whether each item is new.
local fresh = nil
if k > 0 then
  local plan = dedupe_plan(k, blocked, n, first_pos)
  fresh = dedupe_apply(plan)
end
local function is_new(i)
  return fresh == nil or fresh[i]
end

local flags = {}
local added = 0
local woke = false
local now = nil
-- (Queues that become ready, into `ready` together after the loop.)
local ready_adds = {}
local i = 0
for gi = 1, g do
  -- (A queue named twice in one call is created by its first group.)
  local create = limits[gi]
  local qid = qids[gi]
  if not qid then
    -- (The name index was read above: only this call's own new queues are not in it.)
    qid = qid_made(names[gi]) or qcreate(names[gi], create.rate_s, create.iv, create.cap)
  elseif lower and create then
    qlower(qid, qfetch(qid), create.rate_s, create.iv, create.cap)
  end
  local st = qfetch(qid)
  -- Only an empty queue can change place by getting items (schedule.lua's
  -- activate): a queue with items is already where it belongs.
  local was_empty = st.q == 0
  local here = 0
  local first = i + 1
  for _ = 1, counts[gi] do
    i = i + 1
    if is_new(i) then
      if not front then push_tail(qid, st, ARGV[first_item + i - 1]) end
      here = here + 1
      flags[i] = '1'
    else
      flags[i] = '0'
    end
  end
  -- The front band is a stack: pushed last to first, the first is served first.
  -- (push_front counts each in the arena's `queued` itself.)
  if front then
    for j = i, first, -1 do
      if flags[j] == '1' then push_front(qid, st, ARGV[first_item + j - 1], 0, '') end
    end
  end
  if here > 0 then
    if was_empty then
      now = now or now_us()
      if activate_parked(qid, now, ready_adds) then woke = true end
    end
    added = added + here
  end
end
ready_flush(ready_adds)
if added > 0 then
  if not front then mincr('queued', added) end
  mincr('enqueued', added)
end
return finish(woke, tconcat(flags))
