--[[
  enqueue: append items to the tails of one or more queues, optionally
  through the arena's dedupe bitmap: a page's links to every domain they
  point at, in one call.

  KEYS: the arena key block (lua/includes/keys.lua).
  ARGV[1]  shards: the caller's shard count of the arena (meta.lua check_shards)
  ARGV[2]  k: bit positions per item (0 = no dedupe, else 1..MAX_HASHES; needs a configured bitmap)
  ARGV[3]  g: number of queues (1..MAX_PER_CALL)
  ARGV[4 .. 3+2g]   g pairs: queue name (must exist: see setLimits, unless
           created here), n_i (its item count, >= 1)
  then the items, queue by queue (n = sum of n_i, 1..MAX_PER_CALL; 0..MAX_ITEM_BYTES bytes each)
  then item by item its k bit positions (integers < dedupeSpan, else < dedupeBits;
  a shard's part of a bitmap takes position p at bit p mod dedupeBits)
  then, optionally, in any order:
    'create' rate maxInFlight: the limits ('unlimited' or requests per
      second; 0..MAX_IN_FLIGHT) a queue not yet known is created with (as
      setLimits would), here, in the same step as its first items: two
      callers meeting a new queue at once create it once, and a queue that
      exists keeps its own limits. Without it an unknown queue is an error.
    'lower' (with 'create'): a queue that exists tightens to those limits
      where they are stricter (record.lua qlower), so a queue that several
      sites share keeps the strictest of them
    'front': the items go to the queue's front band (items.lua's front
      stack, where leases put back go): served before every item at its
      tail, the call's first item first (across calls, the last call's first).

  An item with dedupe is enqueued only if not all of its bits were already
  set; its bits are set in the same step (BITFIELD SET returns the old bits,
  the whole call's in as few BITFIELD commands as Lua's stack allows, in
  item order), so two producers racing on one item cannot both enqueue it,
  nor can one item twice in one call.
  Returns a string of n characters, '1' for each item enqueued and '0' for
  each dropped by dedupe, in order.
  Errors: WEIR_BAD_ARGS, WEIR_BAD_RATE, WEIR_UNKNOWN_QUEUE, WEIR_NO_DEDUPE, WEIR_SCHEMA, WEIR_SHARDS_CHANGED.
]]
--@include "arena"

-- Bit positions per BITFIELD command (4 arguments each, well inside unpack's limit).
local BITS_PER_BITFIELD = 1000

if #ARGV < 5 then raise('WEIR_BAD_ARGS', 'usage: shards k g (queue n)... items... positions...') end
local k = int_arg(2, 'k', 0, MAX_HASHES)
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
if n > MAX_PER_CALL then raise('WEIR_BAD_ARGS', 'more than ' .. MAX_PER_CALL .. ' items in one call') end
local first_item = 4 + 2 * g
local first_pos = first_item + n
local last_pos = first_pos - 1 + n * k
-- The options: the limits unknown queues are created with, and the band.
local create, front, lower = nil, false, false
local usage = "shards k g (queue n)... items... positions... ['create' rate maxInFlight] ['lower'] ['front']"
if #ARGV < last_pos then argc(last_pos, usage) end
local at = last_pos + 1
while at <= #ARGV do
  local opt = ARGV[at]
  if opt == 'create' and at + 2 <= #ARGV then
    local rate_s = ARGV[at + 1]
    create = { rate_s = rate_s, iv = rate_interval(rate_s, 'created on enqueue'), cap = int_arg(at + 2, 'maxInFlight', 0, MAX_IN_FLIGHT) }
    at = at + 3
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
if lower and not create then raise('WEIR_BAD_ARGS', "'lower' needs 'create' (" .. usage .. ')') end
for i = 1, g do
  if not qids[i] then
    if not create then raise('WEIR_UNKNOWN_QUEUE', 'queue ' .. names[i] .. ' has no limits set; call setLimits first') end
    if sfind(names[i], '\0', 1, true) then raise('WEIR_BAD_ARGS', 'queue name must not hold a NUL byte') end
  end
  groups[i].qid = qids[i]
end
for i = first_item, first_pos - 1 do
  if #ARGV[i] > MAX_ITEM_BYTES then raise('WEIR_ITEM_TOO_LARGE', 'item ' .. (i - first_item + 1) .. ' is over ' .. MAX_ITEM_BYTES .. ' bytes') end
end
-- The bit positions, checked, as BITFIELD's arguments: "SET u1 <p> 1" each
-- (every one checked before the first write: the BITFIELD calls below are
-- it). Built with counters, not #t: this loop runs n * k times a call.
-- A position must be written as BITFIELD reads it, in plain decimal digits
-- (tonumber also takes '0x10', ' 16', '016' and '1e2'). One BITFIELD
-- refuses a bad one before it sets anything (set_bits turns its refusal
-- into WEIR_BAD_ARGS), so that is checked here only when the call's
-- positions take more than one BITFIELD: the first would set its bits
-- before the next refused.
local ops, nops = {}, 0
if k > 0 then
  local bits = tonumber(mget('dedupeBits') or '0')
  if bits == 0 then raise('WEIR_NO_DEDUPE', 'the arena has no dedupe bitmap; call configureDedupe first') end
  local span = tonumber(mget('dedupeSpan') or '') or bits
  local sharded = span ~= bits
  local several = n * k > BITS_PER_BITFIELD
  -- (Below the span, told without tonumber: a position in plain decimal is
  -- below it when it has fewer digits, or as many and sorts before it.
  -- tonumber is glibc's exact strtod, costly for fourteen positions a
  -- link. A position not in plain decimal may pass
  -- this test, and is then refused whole by BITFIELD or the check below.)
  local span_s = fmt(span)
  local span_len = #span_s
  for j = first_pos, first_pos - 1 + n * k do
    local arg = ARGV[j]
    local len = #arg
    if len > span_len or (len == span_len and arg >= span_s) then
      raise('WEIR_BAD_ARGS', 'bit position ' .. arg .. ' is outside the bitmap of ' .. span_s .. ' bits')
    end
    if several and arg ~= '0' and not sfind(arg, '^[1-9]%d*$') then
      raise('WEIR_BAD_ARGS', 'bit position ' .. arg .. ' is not written in plain decimal digits')
    end
    -- (A shard holds part of the bitmap: position p is its bit p mod dedupeBits.)
    if sharded then
      local p = tonumber(arg)
      if p == nil or p % 1 ~= 0 or p < 0 then
        raise('WEIR_BAD_ARGS', 'bit position ' .. arg .. ' is not written in plain decimal digits')
      end
      arg = fmt(p % bits)
    end
    ops[nops + 1], ops[nops + 2], ops[nops + 3], ops[nops + 4] = 'SET', 'u1', arg, '1'
    nops = nops + 4
  end
end

-- Sets every item's bits; returns the old bits, in order. Each bit turned
-- on is counted in meta 'dedupeSet' (the filter's fill, for status, without
-- a BITCOUNT of the whole bitmap).
local function set_bits()
  local old, nold = nil, 0
  local flipped = 0
  for i = 1, nops, 4 * BITS_PER_BITFIELD do
    local got = redis.pcall('BITFIELD', K_DEDUPE, unpack(ops, i, mmin(i + 4 * BITS_PER_BITFIELD - 1, nops)))
    -- (Refused whole, nothing set: a position not in plain decimal, see above.
    -- Any other refusal, say of a key of another type, is Redis's own.)
    if got.err then
      if not sfind(got.err, 'bit offset', 1, true) then error(got) end
      raise('WEIR_BAD_ARGS', 'a bit position is not written in plain decimal digits (' .. got.err .. ')')
    end
    -- (One command's reply is the list itself; a call of more bits than one command takes appends.)
    if not old then
      old, nold = got, #got
    else
      for x = 1, #got do
        nold = nold + 1
        old[nold] = got[x]
      end
    end
  end
  for x = 1, nold do
    if old[x] == 0 then flipped = flipped + 1 end
  end
  if flipped > 0 and mget('dedupeSet') then mincr('dedupeSet', flipped) end
  return old
end

-- Whether item i (1-based over the call) is new: one of its old bits was 0.
local old = k > 0 and set_bits() or nil
local function is_new(i)
  if not old then return true end
  for j = (i - 1) * k + 1, i * k do
    if old[j] == 0 then return true end
  end
  return false
end

local flags = {}
local added = 0
local woke = false
local now = nil
local i = 0
for gi, grp in ipairs(groups) do
  -- (A queue named twice in one call is created by its first group.)
  if not grp.qid then
    -- (The name index was read above: only this call's own new queues are not in it.)
    grp.qid = qid_made(names[gi]) or qcreate(names[gi], create.rate_s, create.iv, create.cap)
  elseif lower then
    qlower(grp.qid, qfetch(grp.qid), create.rate_s, create.iv, create.cap)
  end
  local st = qfetch(grp.qid)
  -- Only an empty queue can change place by getting items (schedule.lua's
  -- activate): a queue with items is already where it belongs.
  local was_empty = st.q == 0
  local here = 0
  local first = i + 1
  for _ = 1, grp.n do
    i = i + 1
    if is_new(i) then
      if not front then push_tail(grp.qid, st, ARGV[first_item + i - 1]) end
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
      if flags[j] == '1' then push_front(grp.qid, st, ARGV[first_item + j - 1], 0, '') end
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
  if not front then mincr('queued', added) end
  mincr('enqueued', added)
end
return finish(woke, tconcat(flags))
