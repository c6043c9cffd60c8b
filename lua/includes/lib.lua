--[[
  The library functions the hot paths call, as locals of the library: a
  local (an upvalue) is read in one step, where `redis.call` or
  `string.sub` is two table lookups, the first in the globals table, on
  every use (a commit-and-take makes a few hundred; these took 4 % of its
  instructions, 7 % of a deduplicated link's). A function library's top
  level may use no global but `redis`, so they are bound on a call's first
  use (begin_call, arena.lua): once for a function library, by every call
  of a script sent by EVAL. Only the hot ones: a script sent by EVAL has
  every include's locals in its main function, which Lua caps at 200.
]]

-- (Defined before the locals below, so the names in it are the globals.)
local function library()
  return tonumber, ipairs, pairs, unpack, string.sub, string.find, string.format,
    struct.pack, struct.unpack, math.max, math.min, math.floor, table.concat
end

local tonumber, ipairs, pairs, unpack, ssub, sfind, sformat
local spack, sunpack, mmax, mmin, mfloor, tconcat
local rcall

local function bind_library()
  if rcall then return end
  tonumber, ipairs, pairs, unpack, ssub, sfind, sformat, spack, sunpack, mmax, mmin, mfloor, tconcat = library()
  rcall = redis.call
end
