--[[
  enqueue: append items to the tail of one queue, optionally through the
  arena's dedupe bitmap.

  KEYS: the arena key block (lua/includes/keys.lua).
  ARGV[1]  queue name (must exist: see setLimits)
  ARGV[2]  n: number of items (1..MAX_PER_CALL)
  ARGV[3]  k: bit positions per item (0 = no dedupe, else 1..MAX_HASHES; needs a configured bitmap)
  ARGV[4 .. 3+n]            the items (0..MAX_ITEM_BYTES bytes each)
  ARGV[4+n .. 3+n+n*k]      item i's k bit positions, item by item (integers < dedupeBits)

  An item with dedupe is enqueued only if not all of its bits were already
  set; its bits are set in the same step (BITFIELD SET returns the old bits),
  so two producers racing on one item cannot both enqueue it.
  Returns a string of n characters, '1' for each item enqueued and '0' for
  each dropped by dedupe, in order.
  Errors: WEIR_BAD_ARGS, WEIR_UNKNOWN_QUEUE, WEIR_NO_DEDUPE, WEIR_SCHEMA.
]]
--@include "arena"

if #ARGV < 3 then raise('WEIR_BAD_ARGS', 'usage: queue n k items... positions...') end
local name = str_arg(1, 'queue name', MAX_NAME_BYTES, false)
local n = int_arg(2, 'n', 1, MAX_PER_CALL)
local k = int_arg(3, 'k', 0, MAX_HASHES)
argc(3 + n + n * k, 'queue n k items... positions...')
ensure_schema()
local qid = qid_of(name)
if not qid then raise('WEIR_UNKNOWN_QUEUE', 'queue ' .. name .. ' has no limits set; call setLimits first') end
for i = 1, n do
  if #ARGV[3 + i] > MAX_ITEM_BYTES then raise('WEIR_ITEM_TOO_LARGE', 'item ' .. i .. ' is over ' .. MAX_ITEM_BYTES .. ' bytes') end
end
local bits = 0
if k > 0 then
  bits = tonumber(redis.call('HGET', K_META, 'dedupeBits') or '0')
  if bits == 0 then raise('WEIR_NO_DEDUPE', 'the arena has no dedupe bitmap; call configureDedupe first') end
  local base = 3 + n
  for j = base + 1, base + n * k do
    local p = tonumber(ARGV[j])
    if p == nil or p % 1 ~= 0 or p < 0 or p >= bits then
      raise('WEIR_BAD_ARGS', 'bit position ' .. tostring(ARGV[j]) .. ' is outside the bitmap of ' .. fmt(bits) .. ' bits')
    end
  end
end

local added = 0
local base = 3 + n
local st = qstate(qid)
local flags = {}
for i = 1, n do
  local new = true
  if k > 0 then
    local ops = {}
    for j = 1, k do
      ops[#ops + 1] = 'SET'
      ops[#ops + 1] = 'u1'
      ops[#ops + 1] = ARGV[base + (i - 1) * k + j]
      ops[#ops + 1] = '1'
    end
    local old = redis.call('BITFIELD', K_DEDUPE, unpack(ops))
    new = false
    for j = 1, k do
      if old[j] == 0 then new = true; break end
    end
  end
  if new then
    push_tail(qid, st, ARGV[3 + i])
    added = added + 1
    flags[i] = '1'
  else
    flags[i] = '0'
  end
end
if added > 0 then
  redis.call('HINCRBY', K_META, 'queued', added)
  mincr('enqueued', added)
  local woke = activate(qid, now_us())
  flush()
  if woke then signal() end
end
return table.concat(flags)
