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
  then, optionally, 'lower': a queue that exists only tightens (record.lua
           qlower: a lower rate, a lower cap; looser limits are left as
           they are); without it, its limits become the ones given

  Returns the number of queues created by this call.
  Errors: WEIR_BAD_ARGS, WEIR_SCHEMA, WEIR_SHARDS_CHANGED. Nothing is written when any argument is bad.
]]
--@include "arena"

if #ARGV < 3 then raise('WEIR_BAD_ARGS', 'usage: shards maxAttempts n [name rate maxInFlight]...') end
local max_att = nil
if ARGV[2] ~= '' then max_att = int_arg(2, 'maxAttempts', 1, MAX_ATTEMPTS) end
local n = int_arg(3, 'n', 0, MAX_PER_CALL)
local lower = #ARGV == 4 + 3 * n and ARGV[4 + 3 * n] == 'lower'
if not lower then argc(3 + 3 * n, "shards maxAttempts n [name rate maxInFlight]... ['lower']") end
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
for _, s in ipairs(specs) do
  local qid = qid_of(s[1])
  if not qid then
    -- (Made empty: in neither `ready` nor `sched`, nothing to place.)
    qcreate(s[1], s[2], s[3], s[4])
    created = created + 1
  elseif lower then
    qlower(qid, qstate(qid), s[2], s[3], s[4])
    if activate(qid, now) then woke = true end
  else
    local st = qstate(qid)
    -- A lower rate applies from the last serve, not from the next: the next
    -- allowed time moves out by the difference. (The interval keeps its
    -- fraction of a µs, a double: it is carried, not rounded.)
    local old_iv = st.iv
    local new_iv = s[3]
    if st.nx > 0 and new_iv > old_iv then
      st.nx = math.ceil(st.nx - old_iv + new_iv)
    end
    st.iv = new_iv
    st.cap = s[4]
    qdirty(qid, st)
    set_rate(qid, s[2], new_iv)
    if activate(qid, now) then woke = true end
  end
end
flush()
if woke then signal() end
return created
