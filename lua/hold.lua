--[[
  hold / unhold: an operator's indefinite stop of one queue or of the whole
  arena, separate from pauses. Leases already out are not touched: they can
  still be committed, retried or released.

  KEYS: the arena key block (lua/includes/keys.lua).
  ARGV[1]  '1' to hold, '0' to unhold
  ARGV[2]  queue name, or '' for the whole arena

  Returns 1.
  Errors: WEIR_BAD_ARGS, WEIR_UNKNOWN_QUEUE.
]]
--@include "arena"

argc(2, 'hold queue')
if ARGV[1] ~= '0' and ARGV[1] ~= '1' then raise('WEIR_BAD_ARGS', 'hold must be 0 or 1') end
local name = str_arg(2, 'queue name', MAX_NAME_BYTES, true)
local hold = ARGV[1] == '1'
local now = now_us()
if name == '' then
  if hold then
    mset('held', '1')
    flush()
  else
    if mget('held') then mdel('held') end
    flush()
    signal()
  end
  return 1
end
local qid = qid_of(name)
if not qid then raise('WEIR_UNKNOWN_QUEUE', 'queue ' .. name .. ' does not exist') end
local st = qstate(qid)
st.hold = hold and 1 or 0
qdirty(qid, st)
finish(activate(qid, now))
return 1
