--[[
  configureDedupe: give the arena its dedupe bitmap. Every client reads the
  size and hash count from the arena, so all agree on bit positions.
  The bitmap is allocated here, at its full size, once: the first write to
  a large empty bitmap would otherwise stall Redis in the middle of a run.

  KEYS: the arena key block (lua/includes/keys.lua).
  ARGV[1]  bits: a multiple of 512 (one block = 64 bytes), 512..MAX_DEDUPE_BITS
  ARGV[2]  hashes: bit positions per item, 1..MAX_HASHES
  ARGV[3]  span (optional): when this shard holds one part of an arena's
           bitmap, the arena-wide size bit positions are given in (bits..
           MAX_DEDUPE_BITS * MAX_SHARDS); position p is then bit p mod bits

  Returns 1 when configured now, 0 when it already was, identically.
  Errors: WEIR_BAD_ARGS, WEIR_DEDUPE_MISMATCH (configured before with other numbers).
]]
--@include "arena"

if #ARGV < 2 or #ARGV > 3 then raise('WEIR_BAD_ARGS', 'usage: bits hashes [span]') end
local bits = int_arg(1, 'bits', 512, MAX_DEDUPE_BITS)
if bits % 512 ~= 0 then raise('WEIR_BAD_ARGS', 'bits must be a multiple of 512') end
local hashes = int_arg(2, 'hashes', 1, MAX_HASHES)
local span = bits
if ARGV[3] then span = int_arg(3, 'span', bits, MAX_DEDUPE_BITS * MAX_SHARDS) end
ensure_schema()
local old_bits = mget('dedupeBits')
if old_bits then
  local old_hashes = mget('dedupeHashes')
  if tonumber(old_bits) == bits and tonumber(old_hashes) == hashes and (tonumber(mget('dedupeSpan') or old_bits) == span) then return 0 end
  raise('WEIR_DEDUPE_MISMATCH', 'arena already has a dedupe bitmap of ' .. old_bits .. ' bits and ' .. tostring(old_hashes) .. ' hashes')
end
mset('dedupeBits', fmt(bits))
mset('dedupeHashes', fmt(hashes))
mset('dedupeSet', '0')
if span ~= bits then mset('dedupeSpan', fmt(span)) end
flush()
rcall('SETBIT', K_DEDUPE, fmt(bits - 1), 0)
return 1
