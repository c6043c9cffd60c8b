--[[
  The dedupe bitmap (keys.lua K_DEDUPE): enqueue.lua's items' bits, tested
  and set in the call that enqueues them, so two producers racing on one
  item cannot both enqueue it, nor can one item go twice in one call. An
  item is new when one of its bits was not set yet. Each bit turned on is
  counted in meta 'dedupeSet' (the filter's fill, for status, without a
  BITCOUNT of the whole bitmap). A shard's part of an arena's bitmap takes
  position p at its bit p mod dedupeBits.

  Two forms of an item's positions:
  - positions: k decimal numbers, set with BITFIELD ("SET u1 <p> 1" each,
    the whole call's in as few BITFIELD commands as Lua's stack allows, in
    item order: each SET returns the bit's old value);
  - blocks (a blocked Bloom filter's, as the crawler's: all of an item's
    bits in one 512-bit block): one argument, struct '>I4' the block b and
    k '>H' offsets o < 512 in it (positions b * 512 + o). The item's 64
    bytes are read with one GETRANGE, its bits tested and set here, and the
    block written back with one SETRANGE if one was new. A BITFIELD
    operation makes four arguments into Redis objects and frees them, and a
    reply, per bit: a kickoff's new URL costs 292,000 instructions in
    positions and 217,000 in blocks (BENCH_PART=instructions of bench:queue,
    2026-12-05). Blocks take two commands an item where BITFIELD takes one
    a call, but commands are not what costs: the crawler sends blocks (the
    client's dedupeBlocks; docs/scaling.md, "Seen-check").
]]
--@include "meta"
local dedupe_plan, dedupe_apply
-- (The names other files use; the rest stay in the block: see arena.lua.)
do
  -- Bit positions per BITFIELD command (4 arguments each, well inside unpack's limit).
  local BITS_PER_BITFIELD = 1000

  -- Lookups for set_blocks, made once when the library loads (by arithmetic:
  -- no global but `redis` there). A block is read as sixteen big-endian
  -- 32-bit words (struct '>I4', one C call for all: a table of its 64 bytes
  -- and back was two calls of 64 values each, an eighth of a new URL's
  -- enqueue); offset o is in word WORD_OF[o] (1-based), as the bit of value
  -- BIT_OF[o]: Redis numbers a byte's bits from its highest, and a
  -- big-endian word's bytes from its highest, so o is the word's bit
  -- 31 - o % 32. Tested and set by arithmetic (`%` and `+`, steps of the
  -- VM), not math.floor or bit.band/bor, which are C calls.
  local WORD_OF, BIT_OF = {}, {}
  for o = 0, 511 do
    WORD_OF[o] = (o - o % 32) / 32 + 1
    local p = 1
    for _ = 1, 31 - o % 32 do p = p * 2 end
    BIT_OF[o] = p
  end
  local WORDS = '>I4I4I4I4I4I4I4I4I4I4I4I4I4I4I4I4'
  local ZEROS = '\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0'

  -- Positions as BITFIELD's arguments, checked: "SET u1 <p> 1" each. Built
  -- with counters, not #t: this loop runs n * k times a call. A position
  -- must be written as BITFIELD reads it, in plain decimal digits (tonumber
  -- also takes '0x10', ' 16', '016' and '1e2'). One BITFIELD refuses a bad
  -- one before it sets anything (set_positions turns its refusal into
  -- WEIR_BAD_ARGS), so that is checked here only when the call's positions
  -- take more than one BITFIELD: the first would set its bits before the
  -- next refused.
  local function position_ops(k, n, first, bits, span)
    local ops, nops = {}, 0
    local sharded = span ~= bits
    local several = n * k > BITS_PER_BITFIELD
    -- (Below the span, told without tonumber: a position in plain decimal is
    -- below it when it has fewer digits, or as many and sorts before it.
    -- tonumber is glibc's exact strtod, costly for fourteen positions a
    -- link. A position not in plain decimal may pass this test, and is then
    -- refused whole by BITFIELD or the check below.)
    local span_s = fmt(span)
    local span_len = #span_s
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
    return { k = k, n = n, ops = ops, nops = nops }
  end

  -- Items' blocks, checked: each as { first byte of its block in this
  -- shard's bitmap, offset, offset, ... }. (configureDedupe makes every
  -- shard's part whole blocks, so a block stays whole in its shard.)
  local function block_items(k, n, first, bits, span)
    if bits % 512 ~= 0 then raise('WEIR_BAD_ARGS', 'positions in block form need a bitmap of whole 512-bit blocks') end
    local bfmt = '>I4' .. string.rep('H', k)
    local blocks = {}
    for i = 1, n do
      local arg = ARGV[first + i - 1]
      if #arg ~= 4 + 2 * k then raise('WEIR_BAD_ARGS', 'item ' .. i .. ': its positions in block form must be ' .. (4 + 2 * k) .. ' bytes') end
      local v = { sunpack(bfmt, arg) }
      local base = v[1] * 512
      -- (Its offsets below the end of its block and of the span, one bound
      -- an item: none when the block starts past the span.)
      local limit = span - base
      if limit > 512 then limit = 512 end
      for h = 2, k + 1 do
        local o = v[h]
        if o >= limit then
          raise('WEIR_BAD_ARGS', 'bit position ' .. fmt(base + o) .. ' is outside the bitmap of ' .. fmt(span) .. ' bits (or its offset is past its block)')
        end
      end
      v[1] = (base % bits) / 8
      blocks[i] = v
    end
    return { k = k, n = n, blocks = blocks }
  end

  -- The call's n items' positions (k an item, from ARGV[first] on; in block
  -- form one argument an item), every one checked: a plan for dedupe_apply.
  -- Nothing is written yet.
  function dedupe_plan(k, blocked, n, first)
    local bits = tonumber(mget('dedupeBits') or '0')
    if bits == 0 then raise('WEIR_NO_DEDUPE', 'the arena has no dedupe bitmap; call configureDedupe first') end
    local span = tonumber(mget('dedupeSpan') or '') or bits
    if blocked then return block_items(k, n, first, bits, span) end
    return position_ops(k, n, first, bits, span)
  end

  -- Positions: the BITFIELD calls; how many bits were turned on, and whether
  -- each item is new.
  local function set_positions(plan)
    local ops, nops, k = plan.ops, plan.nops, plan.k
    local old, nold = nil, 0
    for i = 1, nops, 4 * BITS_PER_BITFIELD do
      local got = redis.pcall('BITFIELD', K_DEDUPE, unpack(ops, i, mmin(i + 4 * BITS_PER_BITFIELD - 1, nops)))
      -- (Refused whole, nothing set: a position not in plain decimal, see
      -- above. Any other refusal, say of a key of another type, is Redis's own.)
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
    local fresh, flipped = {}, 0
    for i = 1, plan.n do
      local new = false
      for j = (i - 1) * k + 1, i * k do
        if old[j] == 0 then
          new = true
          flipped = flipped + 1
        end
      end
      fresh[i] = new
    end
    return flipped, fresh
  end

  -- Blocks: item after item, its block read, its bits tested and set, the
  -- block written back when one was not set yet (so an item later in the
  -- call sees an earlier one's bits). Redis numbers a byte's bits from its
  -- highest: offset o is bit 7 - o % 8 of byte o // 8.
  local function set_blocks(plan)
    -- (Locals, not the upvalues: a register is read in no step of its own,
    -- and the loop below reads them 14 times an item.)
    local word_of, bit_of = WORD_OF, BIT_OF
    local k = plan.k
    local fresh, flipped = {}, 0
    for i = 1, plan.n do
      local v = plan.blocks[i]
      local at = v[1]
      local at_s = fmt(at)
      local old = rcall('GETRANGE', K_DEDUPE, at_s, fmt(at + 63))
      -- (A bitmap shorter than the block reads as zeros past its end.)
      if #old < 64 then old = old .. ssub(ZEROS, 1, 64 - #old) end
      -- (unpack's 17th value is where it stopped: not a word.)
      local words = { sunpack(WORDS, old) }
      local set = 0
      for h = 2, k + 1 do
        local o = v[h]
        local w = word_of[o]
        local p = bit_of[o]
        local x = words[w]
        if x % (p + p) < p then
          words[w] = x + p
          set = set + 1
        end
      end
      if set > 0 then rcall('SETRANGE', K_DEDUPE, at_s, spack(WORDS, unpack(words, 1, 16))) end
      flipped = flipped + set
      fresh[i] = set > 0
    end
    return flipped, fresh
  end

  -- Sets the plan's bits; whether each item (1..n, in order) is new.
  function dedupe_apply(plan)
    local flipped, fresh
    if plan.blocks then
      flipped, fresh = set_blocks(plan)
    else
      flipped, fresh = set_positions(plan)
    end
    if flipped > 0 and mget('dedupeSet') then mincr('dedupeSet', flipped) end
    return fresh
  end
end
