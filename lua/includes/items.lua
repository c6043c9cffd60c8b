--[[
  Item storage. A queue is its front stack, then its chunks, oldest first:
  - chunks n = hc..tc: items appended at the tail, each as a 4-byte
    big-endian length and the bytes, packed up to CHUNK_BYTES per chunk.
    The open chunk (n = tc) is field "<qid>:t" of the state hash, beside
    the queue's record, and so is the sealed chunk being read (n = hc <
    tc), field "<qid>:h": a call reads the record and both with one command
    (qfetch, prefetch) and writes them with the call's HSET (arena.lua
    flush). Once full, the open chunk is sealed into `items` as "<qid>:<n>"
    (or straight into "<qid>:h" when it is the one being read); a sealed
    chunk moves from `items` to "<qid>:h" when its turn to be read comes.
    "<qid>:h" is chunk hc or empty (then chunk hc is in `items`). A dequeue
    reads at the head chunk's offset `ho` without rewriting it; a chunk
    read through is dropped, the open one emptied, and an append cuts the
    open one's read part when it is the one being read (drop_read_part).
    Packing keeps Redis's per-entry overhead (~60 bytes for a hash field of
    its own) off each item.
  - front entries "<qid>:f<k>" of `items`, k = 1..fn: items put back at the
    head (lease expired, released, retried), a stack, so the last one put
    back is served next; each is struct '>I4I4' (attempts, reason length),
    the reason, then the item. Items in chunks have no attempts yet.
  An arena written before the open chunk moved (key-schema version 1) kept
  it in `items` as "<qid>:<tc>": it moves on the queue's first touch.
]]
--@include "record"
local HEADC, TAILC, qfetch, flush_items, push_tail, push_front, take_head, drop_items
-- (The names other files use; the rest stay in the block: see arena.lua.)
do
  -- A chunk is sealed before it would pass this many bytes (so it stays within
  -- jemalloc's 1 KiB size class) or hold this many items. A call reads its
  -- queue's open and head chunks whole, and Redis's Lua hashes every byte of
  -- every string a script gets (its defence against hash flooding), so
  -- smaller chunks cost each call less (the callgrind counts: docs/benchmarks.md);
  -- larger ones cost a command less per so many items and save a little memory.
  local CHUNK_BYTES = 1020
  local CHUNK_ITEMS = 128

  -- Chunks read or being written in this call: the sealed head chunk per queue
  -- ({data, dirty}: data nil while chunk hc is still in `items`; dirty: to
  -- be written as "<qid>:h"), and the open tail chunk per queue ({parts,
  -- dirty, legacy}).
  HEADC = {}
  TAILC = {}

  local function tail_field(qid)
    return qid .. ':t'
  end

  local function head_field(qid)
    return qid .. ':h'
  end

  -- The open chunk as read (false: none yet); an arena's older layout moved.
  local function tail_read(qid, st, data)
    local tail = { parts = {}, dirty = false }
    if not data and st.tn > 0 then
      -- Key-schema 1: the open chunk is still in `items`.
      tail.legacy = qid .. ':' .. fmt(st.tc)
      data = rcall('HGET', K_ITEMS, tail.legacy)
      tail.dirty = true
    end
    if data and data ~= '' then tail.parts[1] = data end
    TAILC[qid] = tail
    return tail
  end

  -- A queue's record, and with it its open and head chunks in the same
  -- command, for a call that will likely append to the queue or read its
  -- head. (A record this call has read already is not read again: its chunks
  -- then come when needed, open_tail and head_data.)
  function qfetch(qid)
    local st = QCACHE[qid]
    if st then return st end
    local tf = tail_field(qid)
    if FIELDC[qid] == nil then
      local hf = head_field(qid)
      local v = rcall('HMGET', K_STATE, qid, tf, hf)
      FIELDC[qid], FIELDC[tf], FIELDC[hf] = v[1], v[2], v[3]
    end
    st = qparse(qid, FIELDC[qid])
    tail_read(qid, st, FIELDC[tf])
    return st
  end

  local function open_tail(qid, st)
    if TAILC[qid] then return TAILC[qid] end
    local data = FIELDC[tail_field(qid)]
    if data == nil then data = rcall('HGET', K_STATE, tail_field(qid)) end
    return tail_read(qid, st, data)
  end

  -- The open and head chunks changed in this call, as field/value pairs for
  -- the call's HSET (arena.lua flush); chunks moved from an older layout are
  -- deleted there.
  function flush_items()
    local out = {}
    for qid, head in pairs(HEADC) do
      if head.dirty then
        out[#out + 1] = head_field(qid)
        out[#out + 1] = head.data or ''
        head.dirty = false
      end
    end
    for qid, tail in pairs(TAILC) do
      if tail.dirty then
        out[#out + 1] = tail_field(qid)
        out[#out + 1] = tconcat(tail.parts)
        if tail.legacy then rcall('HDEL', K_ITEMS, tail.legacy) end
        tail.dirty = false
        tail.legacy = nil
      end
    end
    return out
  end

  -- The open chunk when it is also the one being read (hc == tc) keeps the
  -- items read from it before its offset `ho` until it is read through. A
  -- crawl's queue is read and appended to in turn and seldom read through,
  -- so that dead part grew to the chunk's whole size, and every call that
  -- touches the queue read it (and Redis's Lua hashes every byte of a
  -- string it gets) and every append wrote it back. An append drops it
  -- once it is at least half the chunk, when it costs less to cut than to
  -- keep: the open chunk then holds the items still queued, at offset 0.
  -- (Its items are the queue's queued ones but for its front stack.)
  -- The open chunk's bytes, its parts joined once (a batch may read several
  -- items of it).
  local function tail_bytes(tail)
    if #tail.parts > 1 then tail.parts = { tconcat(tail.parts) } end
    return tail.parts[1] or ''
  end

  local function drop_read_part(st, tail)
    local live = ssub(tail_bytes(tail), st.ho + 1)
    tail.parts = live ~= '' and { live } or {}
    tail.dirty = true
    st.ho = 0
    st.tb = #live
    st.tn = mmax(st.q - st.fn, 0)
  end

  -- Appends an item at the tail (it has no attempts yet). The caller keeps
  -- the arena's `queued` counter.
  function push_tail(qid, st, item)
    local tail = open_tail(qid, st)
    if st.ho > 0 and st.hc == st.tc and 2 * st.ho >= st.tb then drop_read_part(st, tail) end
    local entry = spack('>I4', #item) .. item
    if st.tn > 0 and (st.tb + #entry > CHUNK_BYTES or st.tn >= CHUNK_ITEMS) then
      -- Seal this chunk, the item opens the next: into "<qid>:h" when it is
      -- the one being read, else into `items`.
      local sealed = tconcat(tail.parts)
      if st.hc == st.tc then
        HEADC[qid] = { data = sealed, dirty = true }
        if tail.legacy then rcall('HDEL', K_ITEMS, tail.legacy) end
      else
        rcall('HSET', K_ITEMS, qid .. ':' .. fmt(st.tc), sealed)
      end
      -- (A chunk moved from an older layout is now sealed: kept where it went.)
      tail.legacy = nil
      st.tc = st.tc + 1
      st.tn = 0
      st.tb = 0
      tail.parts = {}
    end
    tail.parts[#tail.parts + 1] = entry
    tail.dirty = true
    st.tn = st.tn + 1
    st.tb = st.tb + #entry
    st.q = st.q + 1
    qdirty(qid, st)
  end

  -- Puts an item back at the head with what it has been through.
  function push_front(qid, st, item, attempts, reason)
    st.fn = st.fn + 1
    rcall('HSET', K_ITEMS, qid .. ':f' .. fmt(st.fn), spack('>I4I4', attempts, #reason) .. reason .. item)
    st.q = st.q + 1
    qdirty(qid, st)
    mincr('queued', 1)
  end

  local function pop_front(qid, st)
    local field = qid .. ':f' .. fmt(st.fn)
    local v = rcall('HGET', K_ITEMS, field)
    rcall('HDEL', K_ITEMS, field)
    st.fn = st.fn - 1
    st.q = st.q - 1
    qdirty(qid, st)
    if not v then return nil, 0 end
    local attempts, rlen = sunpack('>I4I4', v)
    return ssub(v, 9 + rlen), attempts
  end

  -- The chunk items are read from: the open one, or the sealed one beside
  -- the record ("<qid>:h", read with it or now), moved there from `items`
  -- when it is not there yet.
  local function head_data(qid, st)
    if st.hc == st.tc then return tail_bytes(open_tail(qid, st)) end
    local head = HEADC[qid]
    if not head then
      -- (Nothing read through in this call yet: "<qid>:h" is chunk hc or empty.)
      local data = FIELDC[head_field(qid)]
      if data == nil then data = rcall('HGET', K_STATE, head_field(qid)) end
      head = { data = data ~= '' and data or nil, dirty = false }
      HEADC[qid] = head
    end
    if head.data == nil then
      local f = qid .. ':' .. fmt(st.hc)
      head.data = rcall('HGET', K_ITEMS, f) or ''
      rcall('HDEL', K_ITEMS, f)
      head.dirty = true
    end
    return head.data
  end

  -- Drops every item queued in a queue (its front stack and its chunks) and
  -- returns how many there were; the queue is left empty as a read-through
  -- queue is (a fresh open chunk next). Deletes in slices: a queue of n
  -- items has n / CHUNK_ITEMS chunks or more. The caller keeps `queued`.
  function drop_items(qid, st)
    local n = st.q
    local fields = {}
    for k = 1, st.fn do fields[#fields + 1] = qid .. ':f' .. fmt(k) end
    -- (Sealed chunks hc .. tc-1 are in `items`, but for the one being read,
    -- which may be in "<qid>:h": emptied below.)
    for c = st.hc, st.tc - 1 do fields[#fields + 1] = qid .. ':' .. fmt(c) end
    for i = 1, #fields, 1000 do
      rcall('HDEL', K_ITEMS, unpack(fields, i, mmin(i + 999, #fields)))
    end
    local tail = open_tail(qid, st)
    tail.parts = {}
    tail.dirty = true
    HEADC[qid] = { data = nil, dirty = true }
    st.tc = st.tc + 1
    st.hc = st.tc
    st.ho, st.tn, st.tb, st.fn, st.q = 0, 0, 0, 0, 0
    qdirty(qid, st)
    return n
  end

  -- Takes the item at the head: the front stack first, then the head chunk.
  -- Returns item, attempts so far (nil when the storage was tampered with).
  function take_head(qid, st)
    if st.fn > 0 then return pop_front(qid, st) end
    local data = head_data(qid, st)
    st.q = st.q - 1
    qdirty(qid, st)
    if st.ho + 4 > #data then return nil, 0 end
    local len = sunpack('>I4', data, st.ho + 1)
    local item = ssub(data, st.ho + 5, st.ho + 4 + len)
    st.ho = st.ho + 4 + len
    if st.ho >= #data and (st.hc < st.tc or st.q - st.fn <= 0) then
      -- Read through: a sealed chunk is deleted; the open one, if this was
      -- it, is emptied (the queue's chunks are empty now) and the next
      -- append opens a fresh one.
      if st.hc < st.tc then
        -- The next sealed chunk, if any, is in `items` (head_data moves it);
        -- "<qid>:h" is emptied.
        HEADC[qid] = { data = nil, dirty = true }
      else
        local tail = open_tail(qid, st)
        tail.parts = {}
        tail.dirty = true
        st.tc = st.tc + 1
        st.tn = 0
        st.tb = 0
      end
      st.hc = st.hc + 1
      st.ho = 0
    end
    return item, 0
  end
end
