--[[
  Arguments and numbers: checking ARGV, raising typed errors, Redis time.
  The limits (MAX_ITEM_BYTES, MAX_LEASE_MS, ...) come from src/queue/limits.ts,
  generated into every script where the limits directive stands, so TypeScript and Lua
  check the same numbers.
]]
--@include "lib"
--@include "keys"
--@limits

-- Raises a typed error: the reply starts with the code (src/queue/errors.ts
-- turns it into a QueueArgumentError). Every script checks its arguments
-- before its first write, so nothing is written when this fires.
local function raise(code, msg)
  error({ err = code .. ' ' .. msg })
end

-- A number as Redis and the client read it, exactly (tostring would round
-- to 14 digits). A whole number below 2^53, as all the µs, counts and
-- turns are, is printed as an integer ('%d': Lua 5.1 passes it as a C
-- long), which costs a tenth of printing a double ('%.0f').
local function fmt(n)
  if n % 1 == 0 and n < 9007199254740992 and n > -9007199254740992 then
    return sformat('%d', n)
  end
  return sformat('%.0f', n)
end

local function now_us()
  local t = rcall('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

local function int_arg(i, name, min, max)
  local v = tonumber(ARGV[i])
  if v == nil or v ~= v or v % 1 ~= 0 or v < min or v > max then
    raise('WEIR_BAD_ARGS', name .. ' must be an integer in [' .. fmt(min) .. ', ' .. fmt(max) .. '], got ' .. tostring(ARGV[i]))
  end
  return v
end

local function str_arg(i, name, maxlen, allow_empty)
  local v = ARGV[i]
  if type(v) ~= 'string' then raise('WEIR_BAD_ARGS', name .. ' is missing') end
  if (not allow_empty) and #v == 0 then raise('WEIR_BAD_ARGS', name .. ' must not be empty') end
  if #v > maxlen then raise('WEIR_BAD_ARGS', name .. ' is longer than ' .. maxlen .. ' bytes') end
  return v
end

local function argc(n, usage)
  if #ARGV ~= n then raise('WEIR_BAD_ARGS', 'expected ' .. n .. ' arguments (' .. usage .. '), got ' .. #ARGV) end
end

-- A queue's rate as configured ('unlimited' or requests per second) as its
-- interval in µs (0: none). The interval keeps its fraction of a µs.
local function rate_interval(rate_s, name)
  if rate_s == 'unlimited' then return 0 end
  local rate = tonumber(rate_s)
  if rate == nil or rate ~= rate or rate < MIN_RATE or rate > MAX_RATE then
    raise('WEIR_BAD_RATE', 'rate of queue ' .. name .. ' must be a number in [' .. MIN_RATE .. ', ' .. fmt(MAX_RATE) .. '] or unlimited, got ' .. tostring(rate_s))
  end
  return 1000000 / rate
end

-- The rate an interval stands for ('unlimited', or requests a second to 17
-- digits, which read back as the same number). A queue whose configured
-- rate is that number (rate_reads_back) keeps no ':rate' field beside its
-- record (record.lua qcreate): its interval says it until a learned pace
-- changes the interval, and pace.lua writes the field first.
local function interval_rate(iv)
  if iv == 0 then return 'unlimited' end
  return sformat('%.17g', 1000000 / iv)
end

-- Whether rate_s (checked) is what interval_rate of its interval iv gives
-- back: most rates ('1', '0.5', 1/3), not every one (7, 49).
local function rate_reads_back(rate_s, iv)
  return iv == 0 or 1000000 / iv == tonumber(rate_s)
end
