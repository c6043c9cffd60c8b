--[[
  Item storage. A queue is its front stack, then its chunks, oldest first:
  - chunks "<qid>:<n>", n = hc..tc: items appended at the tail, each as a
    4-byte big-endian length and the bytes, packed up to CHUNK_BYTES per
    chunk. A dequeue reads at the head chunk's offset `ho` without rewriting
    it; a chunk is deleted once read through. Packing keeps Redis's
    per-entry overhead (~60 bytes for a hash field of its own) off each item.
  - front entries "<qid>:f<k>", k = 1..fn: items put back at the head
    (lease expired, released, retried), a stack, so the last one put back is
    served next; each is struct '>I4I4' (attempts, reason length), the
    reason, then the item. Items in chunks have no attempts yet.
]]
--@include "record"

-- A chunk is closed before it would pass this many bytes (so it stays within
-- jemalloc's 2 KiB size class) or hold this many items. Smaller chunks cost
-- an enqueue less to rewrite; larger ones save a little memory.
local CHUNK_BYTES = 2040
local CHUNK_ITEMS = 128

-- Chunks read or being written in this call: the head chunk per queue
-- ({n, data}) and the open tail chunk per queue ({n, parts}).
local HEADC = {}
local TAILC = {}

local function write_tail(qid, tail)
  redis.call('HSET', K_ITEMS, qid .. ':' .. fmt(tail.n), table.concat(tail.parts))
  tail.dirty = false
end

local function flush_items()
  for qid, tail in pairs(TAILC) do
    if tail.dirty then write_tail(qid, tail) end
  end
end

-- Appends an item at the tail (it has no attempts yet). The caller keeps
-- the arena's `queued` counter.
local function push_tail(qid, st, item)
  local tail = TAILC[qid]
  if not tail or tail.n ~= st.tc then
    tail = { n = st.tc, parts = {}, dirty = false }
    if st.tn > 0 then tail.parts[1] = redis.call('HGET', K_ITEMS, qid .. ':' .. fmt(st.tc)) end
    TAILC[qid] = tail
  end
  local entry = struct.pack('>I4', #item) .. item
  if st.tn > 0 and (st.tb + #entry > CHUNK_BYTES or st.tn >= CHUNK_ITEMS) then
    -- Close this chunk; the item opens the next.
    if tail.dirty then write_tail(qid, tail) end
    st.tc = st.tc + 1
    st.tn = 0
    st.tb = 0
    tail = { n = st.tc, parts = {}, dirty = false }
    TAILC[qid] = tail
  end
  tail.parts[#tail.parts + 1] = entry
  tail.dirty = true
  st.tn = st.tn + 1
  st.tb = st.tb + #entry
  st.q = st.q + 1
  qdirty(qid, st)
end

-- Puts an item back at the head with what it has been through.
local function push_front(qid, st, item, attempts, reason)
  st.fn = st.fn + 1
  redis.call('HSET', K_ITEMS, qid .. ':f' .. fmt(st.fn), struct.pack('>I4I4', attempts, #reason) .. reason .. item)
  st.q = st.q + 1
  qdirty(qid, st)
  mincr('queued', 1)
end

local function pop_front(qid, st)
  local field = qid .. ':f' .. fmt(st.fn)
  local v = redis.call('HGET', K_ITEMS, field)
  redis.call('HDEL', K_ITEMS, field)
  st.fn = st.fn - 1
  st.q = st.q - 1
  qdirty(qid, st)
  if not v then return nil, 0 end
  local attempts, rlen = struct.unpack('>I4I4', v)
  return string.sub(v, 9 + rlen), attempts
end

local function head_chunk(qid, st)
  local head = HEADC[qid]
  if head and head.n == st.hc then return head end
  local data
  local tail = TAILC[qid]
  if tail and tail.n == st.hc and tail.dirty then
    data = table.concat(tail.parts)
  else
    data = redis.call('HGET', K_ITEMS, qid .. ':' .. fmt(st.hc))
  end
  head = { n = st.hc, data = data or '' }
  HEADC[qid] = head
  return head
end

-- Takes the item at the head: the front stack first, then the head chunk.
-- Returns item, attempts so far (nil when the storage was tampered with).
local function take_head(qid, st)
  if st.fn > 0 then return pop_front(qid, st) end
  local data = head_chunk(qid, st).data
  st.q = st.q - 1
  qdirty(qid, st)
  if st.ho + 4 > #data then return nil, 0 end
  local len = struct.unpack('>I4', data, st.ho + 1)
  local item = string.sub(data, st.ho + 5, st.ho + 4 + len)
  st.ho = st.ho + 4 + len
  if st.ho >= #data and (st.hc < st.tc or st.q - st.fn <= 0) then
    -- Read through: delete it. If it was also the open tail chunk, the
    -- queue's chunks are empty now, so the next append opens a fresh one.
    redis.call('HDEL', K_ITEMS, qid .. ':' .. fmt(st.hc))
    if st.hc == st.tc then
      st.tc = st.tc + 1
      st.tn = 0
      st.tb = 0
      TAILC[qid] = nil
    end
    st.hc = st.hc + 1
    st.ho = 0
    HEADC[qid] = nil
  end
  return item, 0
end
