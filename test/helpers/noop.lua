--[[
  noop: does nothing but what every script does on entry. The benchmark's
  ceiling: a script called exactly the way the real ones are.

  KEYS: the arena key block (lua/includes/keys.lua).
  ARGV: anything.
  Returns the number of arguments.
]]
--@include "arena"

return #ARGV
