--[[
  pause: no dequeue from a queue for a while (a server asked us to slow
  down, or a robots.txt fetch for it is in flight). A later pause end wins
  over an earlier one: a shorter pause never shortens one. With ARGV[3], the
  caller moves a pause it set itself: the end becomes now + ms, earlier or
  later, but only while it is still the end that caller's pause returned
  (another pause since then wins).

  KEYS: the arena key block (lua/includes/keys.lua).
  ARGV[1]  queue name
  ARGV[2]  pause length in ms from now, by Redis time (0..MAX_DELAY_MS)
  ARGV[3]  '' for a plain pause, or the end (ms) a pause call returned: move that pause

  Returns the pause end in ms since the epoch (Redis time); with ARGV[3],
  { end, 1 } when the caller's pause was moved, { end, 0 } when another
  pause had moved it (it is not the caller's to move any more).
  Errors: WEIR_BAD_ARGS, WEIR_UNKNOWN_QUEUE.
]]
--@include "arena"

argc(3, 'queue ms expectedEnd')
local name = str_arg(1, 'queue name', MAX_NAME_BYTES, false)
local ms = int_arg(2, 'ms', 0, MAX_DELAY_MS)
local expected = nil
if ARGV[3] ~= '' then expected = int_arg(3, 'expectedEnd', 0, 9007199254740991) end
local qid = qid_of(name)
if not qid then raise('WEIR_UNKNOWN_QUEUE', 'queue ' .. name .. ' does not exist') end
local now = now_us()
local st = qstate(qid)
local wanted = now + ms * 1000
local moved = 0
if expected == nil then
  st.p = mmax(st.p, wanted)
elseif mfloor(st.p / 1000) == expected then
  st.p = wanted
  moved = 1
end
slot_moved_earlier(st)
qdirty(qid, st)
finish(activate(qid, now))
if expected == nil then return fmt(mfloor(st.p / 1000)) end
return { fmt(mfloor(st.p / 1000)), moved }
