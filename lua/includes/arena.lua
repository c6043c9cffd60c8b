--[[
  What every queue script includes: the key block (keys.lua), arguments and
  limits (args.lua), the meta hash (meta.lua), queue records (record.lua), item storage (items.lua),
  the schedule (schedule.lua) and leases (leases.lua); each included once.
]]
--@include "leases"

-- Every call starts here: its keys bound, and nothing cached from another
-- call (a Redis function's library outlives its calls; see src/queue/scripts.ts).
local function begin_call()
  bind_keys(KEYS)
  META, MDIRTY = nil, {}
  QCACHE, QDIRTY = {}, {}
  HEADC, TAILC = {}, {}
end

-- Writes back what this call changed in memory: open tail chunks, queue
-- records and meta fields. A script that changed any of them calls this (or
-- finish) before it returns; read-only scripts need not.
local function flush()
  flush_records(flush_items())
  flush_meta()
end

-- The end of a writing script: everything written back, one idle worker
-- woken if the call may have made work ready.
local function finish(woke, result)
  flush()
  if woke then signal() end
  return result
end
