--[[
  stats: arena totals in constant time from counters the scripts keep, and
  per-queue figures: a page of queues in id order, the biggest backlogs,
  the queues eligible longest, or queues by name.

  KEYS: the arena key block (lua/includes/keys.lua).
  ARGV[1]  what: a cursor (the first qid of a page, 1 to start), or
           'top' (the biggest backlogs, by the backlog index, then by ids
           among queues of fewer than 16), 'waiting'
           (eligible queues, longest in the round first), 'names' (those named)
  ARGV[2]  count: queues at most (0..500); with 'names', the first name
  ARGV[3..] with 'names', the other names (500 in all at most)
  ARGV[3]  with 'top' or 'waiting', 'ranks': only each queue's name and
           rank key (its queued count; its eligible time, ms), for up to
           10,000 queues (a page deeper than 500 is cut from these: see
           FairQueue.busiestQueues)

  Returns {nowMs, totals, nextCursor, rows, exact}:
    totals = {queued, leased, delayed, done, dead, enqueued, queues, held,
              maxAttempts, dedupeBits, dedupeHashes, schemaVersion, expired}
    nextCursor = 0 when the page reached the last queue (and for the other kinds)
    rows = per queue {name, rate, maxInFlight, queued, leased, delayed, done,
           dead, nextEligibleMs, pausedUntilMs, held, intervalUs (in force: pace.lua)}
    exact = 'top': 0 when no queue was left out that is bigger than a row;
           N when a bucket of the index was read in part: a queue left out
           has fewer than N queued; -1 when this shard has queues made
           before the index (not indexed: the caller pages instead); else 0
]]
--@include "arena"

-- Queues 'top' looks at in one call at most (each a record read: about 10 ms).
local MAX_TOP_SCAN = 20000

local what = ARGV[1]
local ranks_only = (what == 'top' or what == 'waiting') and ARGV[3] == 'ranks'
local count = 0
if what ~= 'names' then count = int_arg(2, 'count', 0, ranks_only and MAX_STATS_RANK or MAX_STATS_PAGE) end
local now = now_us()
local totals = {}
for i, f in ipairs({ 'queued', 'leased', 'delayed', 'done', 'dead', 'enqueued', 'qseq', 'held', 'maxAttempts', 'dedupeBits', 'dedupeHashes', 'v', 'expired' }) do
  local x = mget(f)
  totals[i] = type(x) == 'number' and fmt(x) or x or ''
end
if totals[9] == '' then totals[9] = tostring(DEFAULT_MAX_ATTEMPTS) end
local last = mget('qseq')

-- Queues' rows, with one HMGET for their records and rates (a scrape of the
-- status page or the metrics costs one command per page, not two per queue).
local function rows_of(qids)
  local fields = {}
  for _, s in ipairs(qids) do
    fields[#fields + 1] = s
    fields[#fields + 1] = s .. ':rate'
  end
  local rows = {}
  local got = #fields > 0 and rcall('HMGET', K_STATE, unpack(fields)) or {}
  for i = 1, #fields, 2 do
    local st = qparse(fields[i], got[i] or nil)
    rows[#rows + 1] = {
      st.name, got[i + 1] or interval_rate(st.iv), fmt(st.cap), fmt(st.q), fmt(st.l), fmt(st.d),
      fmt(st.done), fmt(st.dead), fmt(mfloor(mmax(st.nx, st.p) / 1000)), fmt(mfloor(st.p / 1000)), fmt(st.hold),
      sformat('%.3f', st.iv),
    }
  end
  return rows
end

local qids, exact, next_cursor = {}, 0, 0
if what == 'top' then
  if last > 0 and rcall('HGET', K_STATE, 'bix') ~= '1' then
    exact = -1
  else
    -- Every queue of the buckets read is ranked by its exact count (buckets
    -- are read whole where the reading cap allows): the index's buckets
    -- (16 or more queued) from the highest; then, when the index ran out
    -- before enough were found, the queues of bucket 0 (fewer than 16, the
    -- empty ones too, not in the index: record.lua), by their ids from the
    -- last made, a chunk at a time, until enough have URLs or MAX_TOP_SCAN
    -- queues were looked at.
    local chunk = mmin(count * 4 + 100, 2000)
    local ranked, read, cand = {}, 0, {}
    local function rank(qid, st)
      ranked[#ranked + 1] = { qid = qid, q = st.q, name = st.name }
    end
    repeat
      cand = rcall('ZREVRANGEBYSCORE', K_BACKLOG, '+inf', '1', 'WITHSCORES', 'LIMIT', read, chunk)
      for i = 1, #cand, 2 do rank(cand[i], qstate(cand[i])) end
      read = read + #cand / 2
    until #cand / 2 < chunk or #ranked >= count or read >= MAX_TOP_SCAN
    if #cand / 2 >= chunk and #cand > 0 then
      -- (Cut: the last bucket read may hold more, each with fewer than 2^(bucket + 4) queued.)
      exact = 2 ^ (tonumber(cand[#cand]) + 4)
    else
      -- (Newest first: in a crawl the queues made last are the likeliest to hold URLs.)
      local id = last
      while id >= 1 and #ranked < count and read < MAX_TOP_SCAN do
        local upto = mmax(1, id - chunk + 1)
        -- (A chunk's records in one read, not a command a queue.)
        local ids = {}
        for qid = id, upto, -1 do ids[#ids + 1] = fmt(qid) end
        local recs = rcall('HMGET', K_STATE, unpack(ids))
        for i = 1, #ids do
          if recs[i] then
            local st = qparse(ids[i], recs[i])
            -- (Those with 16 or more were ranked from the index.)
            if st.q > 0 and st.q < 16 then rank(ids[i], st) end
          end
        end
        read = read + #ids
        id = upto - 1
      end
      -- (Cut in bucket 0: a queue left out has fewer than 16.)
      if id >= 1 then exact = 16 end
    end
    -- (Ties by name, as the client merges shards: a page cut here and the next cut there agree.)
    table.sort(ranked, function(a, b)
      if a.q ~= b.q then return a.q > b.q end
      return a.name < b.name
    end)
    for i = 1, mmin(count, #ranked) do qids[i] = ranked[i].qid end
  end
elseif what == 'waiting' then
  -- (By score below +inf: `ready`'s keeper is no queue, schedule.lua.)
  qids = rcall('ZRANGE', K_READY, '-inf', '(+inf', 'BYSCORE', 'LIMIT', 0, count)
elseif what == 'names' then
  if #ARGV - 1 > MAX_STATS_PAGE then raise('WEIR_BAD_ARGS', 'at most ' .. MAX_STATS_PAGE .. ' names') end
  if #ARGV >= 2 then
    local found = rcall('HMGET', K_QIDS, unpack(ARGV, 2))
    for i = 1, #ARGV - 1 do
      -- (A name with a NUL byte is no queue's: record.lua QIDS_KEEPER.)
      if found[i] and not sfind(ARGV[i + 1], '\0', 1, true) then qids[#qids + 1] = found[i] end
    end
  end
else
  argc(2, 'cursor count')
  local cursor = int_arg(1, 'cursor', 1, MAX_OFFSET)
  local qid = cursor
  while qid <= last and qid < cursor + count do
    qids[#qids + 1] = fmt(qid)
    qid = qid + 1
  end
  if qid <= last then next_cursor = qid end
end
-- Names and rank keys only (a deep page is cut from these by the caller, its rows read by name).
local function ranks_of(ids)
  local rows = {}
  for i, qid in ipairs(ids) do
    local st = qstate(qid)
    rows[i] = { st.name, fmt(what == 'top' and st.q or mfloor(mmax(st.nx, st.p) / 1000)) }
  end
  return rows
end

return { fmt(mfloor(now / 1000)), totals, next_cursor, ranks_only and ranks_of(qids) or rows_of(qids), exact }
