--[[
  stats: arena totals in constant time from counters the scripts keep, and a
  page of per-queue figures.

  KEYS: the arena key block (lua/includes/keys.lua).
  ARGV[1]  cursor: the first qid of the page (1 to start)
  ARGV[2]  count: queues in the page (0..500)

  Returns {nowMs, totals, nextCursor, rows}:
    totals = {queued, leased, delayed, done, dead, enqueued, queues, held,
              maxAttempts, dedupeBits, dedupeHashes, schemaVersion, expired}
    nextCursor = 0 when the page reached the last queue
    rows = per queue {name, rate, maxInFlight, queued, leased, delayed, done,
           dead, nextEligibleMs, pausedUntilMs, held, intervalUs (in force: pace.lua)}
]]
--@include "arena"

argc(2, 'cursor count')
local cursor = int_arg(1, 'cursor', 1, MAX_OFFSET)
local count = int_arg(2, 'count', 0, MAX_STATS_PAGE)
local now = now_us()
local totals = {}
for i, f in ipairs({ 'queued', 'leased', 'delayed', 'done', 'dead', 'enqueued', 'qseq', 'held', 'maxAttempts', 'dedupeBits', 'dedupeHashes', 'v', 'expired' }) do
  local x = mget(f)
  totals[i] = type(x) == 'number' and fmt(x) or x or ''
end
if totals[9] == '' then totals[9] = tostring(DEFAULT_MAX_ATTEMPTS) end
local last = mget('qseq')
-- The page's records and rates with one HMGET (a scrape of the status page
-- or the metrics costs one command per page, not two per queue).
local fields = {}
local qid = cursor
while qid <= last and qid < cursor + count do
  local s = fmt(qid)
  fields[#fields + 1] = s
  fields[#fields + 1] = s .. ':rate'
  qid = qid + 1
end
local rows = {}
local got = #fields > 0 and rcall('HMGET', K_STATE, unpack(fields)) or {}
for i = 1, #fields, 2 do
  local st = qparse(fields[i], got[i] or nil)
  rows[#rows + 1] = {
    st.name, got[i + 1] or '', fmt(st.cap), fmt(st.q), fmt(st.l), fmt(st.d),
    fmt(st.done), fmt(st.dead), fmt(mfloor(mmax(st.nx, st.p) / 1000)), fmt(mfloor(st.p / 1000)), fmt(st.hold),
    sformat('%.3f', st.iv),
  }
end
local next_cursor = 0
if qid <= last then next_cursor = qid end
return { fmt(mfloor(now / 1000)), totals, next_cursor, rows }
