--[[
  The dedupe bitmap (K_DEDUPE) as enqueue uses it: which of a call's items
  are new, their bits set in the same atomic step, items in call order (an
  item repeated in one call is new once). Two forms of an item's bits:
  - positions (dedupe_positions): k bit positions, each an argument, all
    set with BITFIELD SET, whose reply is the old bits. Any positions.
  - a block (dedupe_blocks): when all k bits lie in one 512-bit block (the
    crawler's blocked Bloom filter puts them there), one argument
    "<block>:<k pairs>", each pair two characters, '0' + the byte in the
    block (0..63) and '0' + the bit in the byte (0..7, 0 the high bit, as
    BITFIELD and SETBIT count). The block is read with one GETRANGE, its
    bits tested and set in Lua, and written back with one SETRANGE if any
    was new. A position costs BITFIELD about 7,800 instructions (an
    argument, four more made into Redis objects, a reply parsed back into
    Lua): 14 of them were 109,000 of a link's 126,000; a block costs a
    command or two whatever k is.
  Either way every argument is checked before anything is written, and
  the bits newly set are counted in meta 'dedupeSet' (the filter's fill).
  A shard holding a part of the arena's bitmap (dedupeSpan > dedupeBits)
  takes position p at bit p mod dedupeBits, so block b at b mod its blocks.
]]

-- Bit positions per BITFIELD command (4 arguments each, well inside unpack's limit).
local BITS_PER_BITFIELD = 1000
local BLOCK_BYTES = 64
-- A bit's mask by the character naming it ('0' + bit, 0 the high bit).
local BIT_MASK = { [48] = 128, [49] = 64, [50] = 32, [51] = 16, [52] = 8, [53] = 4, [54] = 2, [55] = 1 }

-- The bitmap's size here and the arena-wide span positions are given in.
local function dedupe_size()
  local bits = tonumber(mget('dedupeBits') or '0')
  if bits == 0 then raise('WEIR_NO_DEDUPE', 'the arena has no dedupe bitmap; call configureDedupe first') end
  return bits, tonumber(mget('dedupeSpan') or '') or bits
end

local function count_set(flipped)
  if flipped > 0 and mget('dedupeSet') then mincr('dedupeSet', flipped) end
end

-- Positions ARGV[first .. first + n*k - 1], checked, as BITFIELD's
-- arguments: "SET u1 <p> 1" each. A position must be written as BITFIELD
-- reads it, in plain decimal digits (tonumber also takes '0x10', ' 16',
-- '016' and '1e2'). Below the span is told without tonumber (glibc's exact
-- strtod, a thousand instructions a position): a position in plain decimal
-- is below it when it has fewer digits, or as many and sorts before it. One
-- BITFIELD refuses a bad one before it sets anything (set_bits turns its
-- refusal into WEIR_BAD_ARGS), so that is checked here only when the
-- positions take more than one BITFIELD: the first would set its bits
-- before the next refused. Built with counters, not #t: this runs n*k times.
local function position_ops(first, n, k)
  local bits, span = dedupe_size()
  local sharded = span ~= bits
  local several = n * k > BITS_PER_BITFIELD
  local span_s = fmt(span)
  local span_len = #span_s
  local ops, nops = {}, 0
  for j = first, first - 1 + n * k do
    local arg = ARGV[j]
    local len = #arg
    if len > span_len or (len == span_len and arg >= span_s) then
      raise('WEIR_BAD_ARGS', 'bit position ' .. arg .. ' is outside the bitmap of ' .. span_s .. ' bits')
    end
    if several and arg ~= '0' and not sfind(arg, '^[1-9]%d*$') then
      raise('WEIR_BAD_ARGS', 'bit position ' .. arg .. ' is not written in plain decimal digits')
    end
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
  return ops, nops
end

-- Sets every position's bit; returns the old bits, in order.
local function set_bits(ops, nops)
  local old, nold = nil, 0
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
  return old, nold
end

-- Items 1..n, k positions each from ARGV[first]: a table, true for each new item.
local function dedupe_positions(first, n, k)
  local old, nold = set_bits(position_ops(first, n, k))
  local flipped = 0
  for x = 1, nold do
    if old[x] == 0 then flipped = flipped + 1 end
  end
  count_set(flipped)
  local fresh = {}
  for i = 1, n do
    fresh[i] = false
    for j = (i - 1) * k + 1, i * k do
      if old[j] == 0 then
        fresh[i] = true
        break
      end
    end
  end
  return fresh
end

-- Item i's block and where its pairs start, both checked (the pairs
-- themselves as they are read): its block here, 0-based.
local function block_of(spec, i, k, blocks_s, blocks_here)
  local colon = sfind(spec, ':', 1, true)
  if not colon or #spec ~= colon + 2 * k then
    raise('WEIR_BAD_ARGS', 'item ' .. i .. "'s dedupe block must be '<block>:' and " .. k .. ' byte/bit pairs')
  end
  local b = ssub(spec, 1, colon - 1)
  local len = #b
  if len == 0 or len > #blocks_s or (len == #blocks_s and b >= blocks_s) or (b ~= '0' and not sfind(b, '^[1-9]%d*$')) then
    raise('WEIR_BAD_ARGS', 'dedupe block ' .. b .. ' is not a block of the bitmap (0..' .. blocks_s .. ' exclusive, plain decimal)')
  end
  return tonumber(b) % blocks_here, colon + 1
end

-- Items 1..n, one block spec each from ARGV[first]: a table, true for each
-- new item. A block is read once, as a string; it becomes a table of its
-- bytes only when a bit in it is set, and then is written once. (Every
-- spec is checked before the first write: the writes come last.)
local function dedupe_blocks(first, n, k)
  local bits, span = dedupe_size()
  local blocks_here = bits / 512
  -- (Whole blocks only: a span that is not is given positions.)
  local blocks_s = fmt(mfloor(span / 512))
  local read, bytes, order = {}, {}, {}
  local fresh, flipped = {}, 0
  for i = 1, n do
    local spec = ARGV[first + i - 1]
    local b, from = block_of(spec, i, k, blocks_s, blocks_here)
    local s, t = read[b], bytes[b]
    if not s then
      local at = b * BLOCK_BYTES
      s = rcall('GETRANGE', K_DEDUPE, at, at + BLOCK_BYTES - 1)
      read[b] = s
      order[#order + 1] = b
      -- (A bitmap shorter than its size, or gone: the rest is zeros.)
      if #s < BLOCK_BYTES then
        t = { sbyte(s, 1, BLOCK_BYTES) }
        for x = #t + 1, BLOCK_BYTES do t[x] = 0 end
        bytes[b] = t
      end
    end
    local new = false
    for j = from, from + 2 * k - 1, 2 do
      local byte, bit = sbyte(spec, j, j + 1)
      local m = BIT_MASK[bit]
      if byte < 48 or byte >= 48 + BLOCK_BYTES or not m then
        raise('WEIR_BAD_ARGS', 'item ' .. i .. "'s dedupe block has a pair outside '0'..'o' and '0'..'7'")
      end
      local x = byte - 47
      local v
      if t then v = t[x] else v = sbyte(s, x) end
      -- (Clear, so adding the mask sets it: Lua 5.1 has no bitwise or.)
      if v % (m + m) < m then
        if not t then
          t = { sbyte(s, 1, BLOCK_BYTES) }
          bytes[b] = t
        end
        t[x] = v + m
        flipped = flipped + 1
        new = true
      end
    end
    fresh[i] = new
  end
  for _, b in ipairs(order) do
    local t = bytes[b]
    if t then rcall('SETRANGE', K_DEDUPE, b * BLOCK_BYTES, schar(unpack(t))) end
  end
  count_set(flipped)
  return fresh
end
