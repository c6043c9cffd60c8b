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
    'floor', µs: the queues' floor (0 lifts it): the longest interval they
           keep whatever rate a later call gives them (a site's own request:
           robots.txt's Crawl-delay), kept in field "<qid>:floor";
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
local floor_us = nil
if mode == 'floor' and #ARGV == 5 + 3 * n then
  -- (A floor under the fastest rate's interval is no floor: 0 or at least that.)
  floor_us = int_arg(5 + 3 * n, 'floor', 0, 1000000 / MIN_RATE)
  if floor_us > 0 and floor_us < 1000000 / MAX_RATE then raise('WEIR_BAD_ARGS', 'floor must be 0 or at least ' .. fmt(1000000 / MAX_RATE) .. ' µs, got ' .. ARGV[5 + 3 * n]) end
elseif not lower then
  argc(3 + 3 * n, "shards maxAttempts n [name rate maxInFlight]... ['lower' | 'floor' µs]")
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
  local floor = floor_us or 0
  if not qid then
    -- (Made empty: in neither `ready` nor `sched`, nothing to place.)
    if floor > s[3] then
      qid = qcreate(s[1], interval_rate(floor), floor, s[4])
    else
      qid = qcreate(s[1], s[2], s[3], s[4])
    end
    if floor > 0 then defer_hset(qid .. ':floor', fmt(floor)) end
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
    if floor_us then
      if floor_us > 0 then defer_hset(qid .. ':floor', fmt(floor_us)) elseif floor_was then defer_hdel(qid .. ':floor') end
      if a then got[a + 3] = floor_us > 0 and fmt(floor_us) or false end
    elseif floor_was then
      floor = tonumber(floor_was) or 0
    end
    local rate_s, configured = s[2], s[3]
    if floor > configured then rate_s, configured = interval_rate(floor), floor end
    -- In force: the configured interval, or a longer pace learned since.
    local new_iv = configured
    if pace then
      local _, _, learned = sfind(pace, ':(.+)$')
      new_iv = mmax(new_iv, tonumber(learned) or 0)
    end
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
