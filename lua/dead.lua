--[[
  dead: read a page of the dead letter, oldest first.

  KEYS: the arena key block (lua/includes/keys.lua).
  ARGV[1]  offset (0..)
  ARGV[2]  count (1..MAX_PER_CALL)

  Returns a list of JSON records {queue, item, reason, attempts, at (ms)}.
]]
--@include "arena"

argc(2, 'offset count')
local offset = int_arg(1, 'offset', 0, MAX_OFFSET)
local count = int_arg(2, 'count', 1, MAX_PER_CALL)
return rcall('LRANGE', K_DEAD, offset, offset + count - 1)
