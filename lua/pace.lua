--[[
  pace: a caller tells how a request to a queue's site went, and the queue's
  interval learns from it: one pace, kept with the queue, that every caller
  of every machine is served by (the rate is applied where any rate is, by
  the script that serves the slot). A queue's callers opt in by sending
  these reports; a queue never reported on keeps its configured rate.

  The rule (Heritrix's delay factor, with a multiplicative back-off on
  errors): `avg` is the request time smoothed over reports (each report
  weighs 0.3); the target interval is delayFactor × avg, at least the
  configured interval (the pace never exceeds the configured rate) and at
  most maxDelayMs. A healthy answer moves the interval to the target at
  once when the target is longer, or a quarter of the way down toward it
  (× 0.75) when shorter; an error (5xx, 429, a timeout, a failed
  connection) doubles it (from at least ERROR_FLOOR_US), up to maxDelayMs.

  State: field "<qid>:pace" of the state hash, "<avg ms>:<interval µs>".
  The interval in force is the record's `iv` (what serve.lua reads): the
  learned one, or the configured one when that is longer (a Crawl-delay
  set since). A longer interval applies from the last serve, as setLimits'
  does: the next allowed time moves out by the difference.

  KEYS: the arena key block (lua/includes/keys.lua).
  ARGV[1]  queue name
  ARGV[2]  ms the request took (0..MAX_DELAY_MS)
  ARGV[3]  '1' a healthy answer, '0' an error
  ARGV[4]  delayFactor (a number in [0, 1000])
  ARGV[5]  maxDelayMs: the longest interval the pace may reach (1..MAX_DELAY_MS)

  Returns the interval in force, µs (0: none), or -1 when the queue does not exist.
  Errors: WEIR_BAD_ARGS.
]]
--@include "arena"

-- An error on a queue with no interval (unlimited) starts the back-off here.
local ERROR_FLOOR_US = 100000
local WEIGHT = 0.3
local EASE = 0.75

argc(5, 'queue ms healthy delayFactor maxDelayMs')
local name = str_arg(1, 'queue name', MAX_NAME_BYTES, false)
local ms = int_arg(2, 'ms', 0, MAX_DELAY_MS)
local healthy = ARGV[3]
if healthy ~= '1' and healthy ~= '0' then raise('WEIR_BAD_ARGS', "healthy must be '1' or '0', got " .. tostring(healthy)) end
local factor = tonumber(ARGV[4])
if factor == nil or factor ~= factor or factor < 0 or factor > 1000 then raise('WEIR_BAD_ARGS', 'delayFactor must be a number in [0, 1000], got ' .. tostring(ARGV[4])) end
local max_us = int_arg(5, 'maxDelayMs', 1, MAX_DELAY_MS) * 1000
local qid = qid_of(name)
if not qid then return -1 end
local st = qstate(qid)
local got = rcall('HMGET', K_STATE, qid .. ':rate', qid .. ':pace')
-- (No ':rate': the record's interval is its rate, args.lua interval_rate;
-- so for a queue made before rates were stored beside it.)
local base = got[1] and rate_interval(got[1], name) or st.iv
local avg, cur = pace_of(got[2] or nil)
avg = avg and (avg + WEIGHT * (ms - avg)) or ms
local target = mmin(max_us, mmax(base, factor * avg * 1000))
if healthy == '1' then
  cur = target >= cur and target or mmax(target, cur * EASE)
else
  cur = mmin(max_us, mmax(cur, target, ERROR_FLOOR_US) * 2)
end
local iv = mmax(base, cur)
-- (The configured rate written down before the interval stops saying it.)
if not got[1] and iv ~= st.iv then defer_hset(qid .. ':rate', interval_rate(st.iv)) end
if st.nx > 0 and iv > st.iv then st.nx = math.ceil(st.nx - st.iv + iv) end
st.iv = iv
qdirty(qid, st)
defer_hset(qid .. ':pace', sformat('%.3f', avg) .. ':' .. sformat('%.0f', cur))
finish(activate(qid, now_us()))
return mfloor(iv)
