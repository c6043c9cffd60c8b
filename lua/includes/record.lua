--[[
  The per-queue record: field "<qid>" of the state hash is struct.pack('<d' x 18)
  of the numbers below, followed by the queue's name. It is read once per
  call into a cache (with the meta fields when the call knows the queue
  from the start: meta.lua prefetch), changed in place, and written back
  once by the call's HSET (records_args), however many of its numbers change.

    q     queued                   l     leased
    hc    head chunk number        ho    byte offset of the next item in it
    tc    tail chunk number        tn    items in the tail chunk
    tb    bytes in the tail chunk  fn    items in the front stack
    nx    µs before which it may not be served (rate)
    c     carried fraction of a µs of the interval
    cap   max in flight (0 = no cap)
    p     paused until µs          iv    interval between serves, µs (0 = unlimited)
    hold  1 when held              d     delayed (retry timers)
    done  committed                dead  dead-lettered (now in the dead letter)
    cl    µs until which its next slot is promised to a waiting caller

  and, only while a send is pending, after the name: '\0' and ss, struct
  '<d': the serve time (µs) of the lease whose send the queue waits to hear
  of (sent.lua). Older records have no such tail (ss = 0); a queue name
  never holds '\0' (setLimits refuses one).
]]
--@include "meta"
local QCACHE, QDIRTY, QMADE, qnew, qparse, qstate_if_any, qstate, qdirty, records_args, qid_of, qid_made, qcreate, created_flush, qlower, set_rate, pace_of
-- (The names other files use; the rest stay in the block: see arena.lua.)
do
  local QFIELDS = { 'q', 'l', 'hc', 'ho', 'tc', 'tn', 'tb', 'fn', 'nx', 'c', 'cap', 'p', 'iv', 'hold', 'd', 'done', 'dead', 'cl' }
  -- (Built without string.rep: a function library's top level, where this
  -- runs once at load, may use no global but `redis`.)
  local QFMT = '<'
  for _ = 1, #QFIELDS do QFMT = QFMT .. 'd' end
  local QFIXED = #QFIELDS * 8

  QCACHE = {}
  QDIRTY = {}
  -- Queues this call made: name -> qid. Their entries in the name index
  -- (`qids`) are written once, at the call's flush (created_flush), not a
  -- command each (setLimits makes up to 2,000).
  QMADE = {}

  -- (The record is built and packed field by field, in QFIELDS order, rather
  -- than by looping over QFIELDS: a table constructor sizes the table once,
  -- and every queue a call touches is read and written through these two.)
  local function qrecord(ss, name, q, l, hc, ho, tc, tn, tb, fn, nx, c, cap, p, iv, hold, d, done, dead, cl)
    return {
      name = name, q = q, l = l, hc = hc, ho = ho, tc = tc, tn = tn, tb = tb, fn = fn, nx = nx,
      c = c, cap = cap, p = p, iv = iv, hold = hold, d = d, done = done, dead = dead, cl = cl, ss = ss,
      q0 = q,
    }
  end

  local function qpack(st)
    local rec = spack(QFMT, st.q, st.l, st.hc, st.ho, st.tc, st.tn, st.tb, st.fn, st.nx, st.c, st.cap, st.p, st.iv, st.hold, st.d, st.done, st.dead, st.cl) .. st.name
    if st.ss == 0 then return rec end
    return rec .. '\0' .. spack('<d', st.ss)
  end

  function qnew(name)
    return qrecord(0, name, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
  end

  -- A record read from `queues` into the cache (none: an error naming the id).
  function qparse(qid, rec)
    if not rec then
      raise('WEIR_BAD_ARGS', 'queue id ' .. tostring(qid) .. ' has no record')
    end
    -- (A pending send's tail follows the name: see the header.)
    local name, ss = ssub(rec, QFIXED + 1), 0
    local z = sfind(name, '\0', 1, true)
    if z then
      ss = sunpack('<d', name, z + 1)
      name = ssub(name, 1, z - 1)
    end
    local st = qrecord(ss, name, sunpack(QFMT, rec))
    QCACHE[qid] = st
    return st
  end

  -- The record, or nil when the queue id has none.
  function qstate_if_any(qid)
    if QCACHE[qid] then return QCACHE[qid] end
    local rec = FIELDC[qid]
    if rec == nil then rec = rcall('HGET', K_STATE, qid) end
    return rec and qparse(qid, rec) or nil
  end

  function qstate(qid)
    return qstate_if_any(qid) or qparse(qid, nil)
  end

  function qdirty(qid, st)
    QCACHE[qid] = st
    QDIRTY[qid] = true
  end

  -- A queue's place in the backlog index (keys.lua K_BACKLOG): 0 for fewer
  -- than 16 queued (empty too: a crawl's many shallow queues never move),
  -- then one step per power of two (16-31: 1, 32-63: 2, ...). A queue in
  -- bucket b has fewer than 2^(b + 4) queued. Bucket 0 is not written: a
  -- queue is in the index only while it has 16 or more (stats.lua finds
  -- the rest by their ids), so making a queue adds nothing to it (a
  -- member of some 100 B, and at 10^6 queues a sorted-set insert among
  -- 10^6 ties of score 0, each compared by name).
  local function backlog_bucket(q)
    if q < 16 then return 0 end
    local _, e = math.frexp(q)
    return e - 4
  end

  -- The changed records as field/value pairs, appended to `args` (for the
  -- call's one HSET: arena.lua flush); a record whose queued count crossed
  -- a power of two moves in the backlog index (most changes cross none).
  function records_args(args)
    for qid in pairs(QDIRTY) do
      local st = QCACHE[qid]
      args[#args + 1] = qid
      args[#args + 1] = qpack(st)
      if st.q ~= st.q0 then
        local now = backlog_bucket(st.q)
        if now ~= backlog_bucket(st.q0) then
          if now == 0 then rcall('ZREM', K_BACKLOG, qid) else rcall('ZADD', K_BACKLOG, now, qid) end
        end
        st.q0 = st.q
      end
      QDIRTY[qid] = nil
    end
    return args
  end

  function qid_of(name)
    return QMADE[name] or rcall('HGET', K_QIDS, name)
  end

  -- The id of a queue this call made (a name met twice), else nil: for a
  -- caller that has read the name index already.
  function qid_made(name)
    return QMADE[name]
  end

  -- A new queue named `name` (not in `qids`: the caller looked), with its
  -- rate as configured, that rate's interval and its in-flight cap; its id
  -- and record (dirty, so the call's HSET writes it). The caller places it
  -- in the schedule.
  function qcreate(name, rate_s, iv, cap)
    local qid = fmt(mincr('qseq', 1))
    -- (A shard whose first queue these scripts made keeps the backlog index
    -- of every queue: stats.lua 'top' trusts it only then.)
    if qid == '1' then mset('bix', '1') end
    QMADE[name] = qid
    -- (It has no open chunk yet: items.lua need not look for one.)
    FIELDC[qid .. ':t'] = false
    local st = qnew(name)
    st.iv = iv
    st.cap = cap
    qdirty(qid, st)
    set_rate(qid, rate_s, iv, true)
    return qid, st
  end

  -- A queue's configured rate written down beside its record, where the
  -- interval in force iv (st.iv, set first) does not read back as it
  -- (args.lua rate_reads_back: a learned pace longer than the rate, or a
  -- rate such as 7); else no ':rate' (a field of some 60 B and a hash
  -- insert a queue: most rates read back), and one written before is
  -- dropped. Readers take interval_rate(st.iv) when it is missing. `made`:
  -- the queue is new, so has no field to drop.
  function set_rate(qid, rate_s, iv, made)
    if not rate_reads_back(rate_s, iv) then
      defer_hset(qid .. ':rate', rate_s)
    elseif not made then
      defer_hdel(qid .. ':rate')
    end
  end

  -- A queue's learned pace, field "<qid>:pace" as pace.lua writes it
  -- ("<avg ms>:<interval µs>"): the smoothed time (nil: none yet) and the
  -- learned interval (0: none).
  function pace_of(text)
    if not text then return nil, 0 end
    local _, _, a, c = sfind(text, '^([^:]+):(.+)$')
    return tonumber(a), tonumber(c) or 0
  end

  -- A field of the name index that is no queue's name (a name never holds
  -- '\0': setLimits and enqueue refuse one), with a value longer than
  -- Redis's hash-max-listpack-value (64 bytes by default): the index is a
  -- hash table from the arena's first queue on. As a listpack (up to
  -- hash-max-listpack-entries, 512 names by default) it is read from its
  -- start for every name looked up: an enqueue's, each of a page's domains.
  local QIDS_KEEPER = '\0weir:keeps-qids-a-hash-table'
  local QIDS_KEEPER_VALUE = 'a value longer than hash-max-listpack-value, so that the hash is a hash table'

  -- The queues this call made into the name index, with the keeper (an
  -- arena written by an older release gets it with its next new queue).
  -- (Not into the backlog index: a new queue is in bucket 0, unwritten;
  -- records_args puts one that got 16 items or more in its bucket.)
  function created_flush()
    if next(QMADE) == nil then return end
    local names, n = { QIDS_KEEPER, QIDS_KEEPER_VALUE }, 2
    for name, qid in pairs(QMADE) do
      names[n + 1], names[n + 2] = name, qid
      n = n + 2
    end
    QMADE = {}
    for i = 1, n, 2000 do
      rcall('HSET', K_QIDS, unpack(names, i, mmin(i + 1999, n)))
    end
  end

  -- Limits that only tighten (a queue shared by several sites, as a server's
  -- is, keeps its strictest member's): a rate lower than the configured one
  -- becomes the configured rate, applying from the last serve as setLimits'
  -- does (a longer learned pace stays); a cap lower than the queue's (0:
  -- none), its cap. Anything looser changes nothing. True when it changed.
  function qlower(qid, st, rate_s, iv, cap)
    -- (No ':rate': the interval is the configured rate's, args.lua interval_rate.)
    local configured = rcall('HGET', K_STATE, qid .. ':rate')
    local changed = false
    if iv > (configured and rate_interval(configured, st.name) or st.iv) then
      if st.nx > 0 and iv > st.iv then st.nx = math.ceil(st.nx - st.iv + iv) end
      st.iv = mmax(st.iv, iv)
      set_rate(qid, rate_s, st.iv)
      changed = true
    end
    if cap > 0 and (st.cap == 0 or cap < st.cap) then
      st.cap = cap
      changed = true
    end
    if changed then qdirty(qid, st) end
    return changed
  end
end
