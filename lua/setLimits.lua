--[[
  setLimits: create queues or change their rate and in-flight cap, and the
  arena's maxAttempts.

  KEYS: the arena key block (lua/includes/keys.lua).
  ARGV[1]  shards: the caller's shard count of the arena (meta.lua check_shards)
  ARGV[2]  maxAttempts: integer 1..MAX_ATTEMPTS, or '' to leave it as it is
  ARGV[3]  n: number of queues that follow (0..MAX_PER_CALL)
  ARGV[4+3i], ARGV[5+3i], ARGV[6+3i] for i = 0..n-1:
           queue name (1..256 bytes), rate (requests per second, a number in
           [MIN_RATE, MAX_RATE], or 'unlimited'), maxInFlight (integer 0..MAX_IN_FLIGHT, 0 = no cap)
  then, optionally, one of
    'lower': a queue that exists only tightens (record.lua qlower: a lower
           rate, a lower cap; looser limits are left as they are);
    'floor', source, µs: a floor asked by `source` (1..512 bytes, no
           newline, not '*'; µs 0 withdraws it): the queue keeps the longest
           of its sources' floors as its shortest interval, whatever rate a
           later call gives it (a site's own request: each of its origins'
           robots.txt Crawl-delay). Field "<qid>:floor": "<µs> <source>"
           lines, at most MAX_FLOOR_SOURCES; a source past them is merged
           into the line of source '*', which is never withdrawn;
  without either, a queue's limits become the ones given, but its interval
  stays at least its floor (the rate then written down as the floor's) and
  at least the pace it learned (pace.lua, field "<qid>:pace"). A queue whose
  interval, cap and written rate would stay as they are is not written.

  Returns the number of queues created by this call.
  Errors: WEIR_BAD_ARGS, WEIR_SCHEMA, WEIR_SHARDS_CHANGED. Nothing is written when any argument is bad.
]]
--@include "arena"

if #ARGV < 3 then raise('WEIR_BAD_ARGS', 'usage: shards maxAttempts n [name rate maxInFlight]...') end
local max_att = nil
if ARGV[2] ~= '' then max_att = int_arg(2, 'maxAttempts', 1, MAX_ATTEMPTS) end
local n = int_arg(3, 'n', 0, MAX_PER_CALL)
local mode = ARGV[4 + 3 * n]
local lower = mode == 'lower' and #ARGV == 4 + 3 * n
local floor_us, floor_source = nil, nil
if mode == 'floor' and #ARGV == 6 + 3 * n then
  floor_source = str_arg(5 + 3 * n, 'floor source', 2 * MAX_NAME_BYTES, false)
  if floor_source == '*' or sfind(floor_source, '\n', 1, true) then raise('WEIR_BAD_ARGS', "floor source must not be '*' or hold a newline") end
  floor_us = int_arg(6 + 3 * n, 'floor', 0, 1000000 / MIN_RATE)
elseif not lower then
  argc(3 + 3 * n, "shards maxAttempts n [name rate maxInFlight]... ['lower' | 'floor' source µs]")
end

-- Sources a queue keeps floors of, one line each; more are merged into '*'.
local MAX_FLOOR_SOURCES = 64

-- A "<qid>:floor" field's "<µs> <source>" lines (floors_with writes them)
-- as { source, µs }, and the largest µs.
local function floors_of(text)
  local out, top, at = {}, 0, 1
  while text and at <= #text do
    local nl = sfind(text, '\n', at, true) or #text + 1
    local sp = sfind(text, ' ', at, true)
    local us = tonumber(ssub(text, at, sp - 1))
    out[#out + 1] = { ssub(text, sp + 1, nl - 1), us }
    top = mmax(top, us)
    at = nl + 1
  end
  return out, top
end

-- The field with `source`'s floor set to `us` (0: withdrawn; nil when no
-- line is left), and the floor it gives.
local function floors_with(text, source, us)
  local lines, merged = {}, 0
  for _, f in ipairs((floors_of(text))) do
    if f[1] == '*' then merged = mmax(merged, f[2]) elseif f[1] ~= source then lines[#lines + 1] = f end
  end
  if us > 0 then
    if #lines < MAX_FLOOR_SOURCES then lines[#lines + 1] = { source, us } else merged = mmax(merged, us) end
  end
  local out, top = {}, merged
  for i, f in ipairs(lines) do
    out[i] = fmt(f[2]) .. ' ' .. f[1]
    top = mmax(top, f[2])
  end
  if merged > 0 then out[#out + 1] = fmt(merged) .. ' *' end
  return #out > 0 and tconcat(out, '\n') or nil, top
end
ensure_schema()
check_shards(1)

-- Validate everything before the first write.
local specs = {}
for i = 0, n - 1 do
  local name = str_arg(4 + 3 * i, 'queue name', MAX_NAME_BYTES, false)
  -- (A record's pending-send tail follows the name after a '\0': record.lua.)
  if sfind(name, '\0', 1, true) then raise('WEIR_BAD_ARGS', 'queue name must not hold a NUL byte') end
  local rate_s = ARGV[5 + 3 * i]
  local iv = rate_interval(rate_s, name)
  local cap = int_arg(6 + 3 * i, 'maxInFlight of queue ' .. name, 0, MAX_IN_FLIGHT)
  specs[#specs + 1] = { name, rate_s, iv, cap }
end

if max_att then mset('maxAttempts', fmt(max_att)) end
local now = now_us()
local created = 0
local woke = false

-- The queues that exist: their ids (one HMGET of the name index), then
-- their records, written rates, floors and learned paces (one HMGET).
local qids = {}
if n > 0 then
  local names = {}
  for i, s in ipairs(specs) do names[i] = s[1] end
  qids = rcall('HMGET', K_QIDS, unpack(names))
end
local fields, at = {}, {}
for i = 1, n do
  local qid = qids[i]
  if qid and not lower and not at[qid] then
    at[qid] = #fields
    fields[#fields + 1] = qid
    fields[#fields + 1] = qid .. ':rate'
    fields[#fields + 1] = qid .. ':floor'
    fields[#fields + 1] = qid .. ':pace'
  end
end
local got = {}
for i = 1, #fields, 2000 do
  local part = rcall('HMGET', K_STATE, unpack(fields, i, mmin(i + 1999, #fields)))
  for j = 1, #part do got[i + j - 1] = part[j] end
end

for i, s in ipairs(specs) do
  local qid = qid_made(s[1]) or qids[i] or nil
  if not qid then
    -- (Made empty: in neither `ready` nor `sched`, nothing to place.)
    local text, floor = nil, 0
    if floor_us then text, floor = floors_with(nil, floor_source, floor_us) end
    if floor > s[3] then
      qid = qcreate(s[1], interval_rate(floor), floor, s[4])
    else
      qid = qcreate(s[1], s[2], s[3], s[4])
    end
    if text then defer_hset(qid .. ':floor', text) end
    created = created + 1
  elseif lower then
    qlower(qid, qstate(qid), s[2], s[3], s[4])
    if activate(qid, now) then woke = true end
  else
    local st, rate_now, floor_was, pace = nil, nil, nil, nil
    local a = at[qid]
    if a and got[a + 1] then
      -- (Read once: a queue named twice in the call is read from the cache the second time.)
      st = QCACHE[qid] or qparse(qid, got[a + 1])
      rate_now, floor_was, pace = got[a + 2] or nil, got[a + 3] or nil, got[a + 4] or nil
    else
      st = qstate(qid)
    end
    local floor = 0
    if floor_us then
      local text
      text, floor = floors_with(floor_was, floor_source, floor_us)
      if text then defer_hset(qid .. ':floor', text) elseif floor_was then defer_hdel(qid .. ':floor') end
      if a then got[a + 3] = text or false end
    elseif floor_was then
      local _, top = floors_of(floor_was)
      floor = top
    end
    local rate_s, configured = s[2], s[3]
    if floor > configured then rate_s, configured = interval_rate(floor), floor end
    -- In force: the configured interval, or a longer pace learned since.
    local _, learned = pace_of(pace)
    local new_iv = mmax(configured, learned)
    local rate_field = not rate_reads_back(rate_s, new_iv) and rate_s or nil
    if new_iv ~= st.iv or s[4] ~= st.cap or rate_field ~= rate_now then
      -- A lower rate applies from the last serve, not from the next: the next
      -- allowed time moves out by the difference. (The interval keeps its
      -- fraction of a µs, a double: it is carried, not rounded.)
      local old_iv = st.iv
      if st.nx > 0 and new_iv > old_iv then
        st.nx = math.ceil(st.nx - old_iv + new_iv)
      end
      st.iv = new_iv
      st.cap = s[4]
      qdirty(qid, st)
      set_rate(qid, rate_s, new_iv)
      -- (What a second mention of the queue in this call compares with.)
      if a then got[a + 2] = rate_field or false end
      if activate(qid, now) then woke = true end
    end
  end
end
flush()
if woke then signal() end
return created
