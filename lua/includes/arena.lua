--[[
  What every queue script includes: the key block (keys.lua), arguments and
  limits (args.lua), the meta hash (meta.lua), queue records (record.lua), item storage (items.lua),
  the dedupe bitmap (dedupe.lua), the schedule (schedule.lua), leases (leases.lua), commits
  (commits.lua), and dequeue's steps: work coming due (promote.lua),
  promises (promises.lua) and serving (serve.lua); each included once. (A
  function library compiles them once for all scripts; a script sent by
  EVAL, on Redis 6, carries them all.)

  All of them share one chunk, and Lua 5.1 compiles at most 200 locals in
  scope at once: each include declares at its top only the names other
  files use, and keeps its own helpers in a `do ... end` block, where the
  names above are set (test/queue/scripts.test.ts keeps room for 30 more).
]]
--@include "commits"
--@include "dedupe"
--@include "promote"
--@include "serve"

-- Every call starts here: its keys bound, and nothing cached from another
-- call (a Redis function's library outlives its calls; see src/queue/scripts.ts).
local function begin_call()
  bind_library()
  bind_keys(KEYS)
  meta_reset()
  commits_reset()
  QCACHE, QDIRTY = {}, {}
  -- (Left by a call that failed after making queues, and wrote none of them.)
  if next(QMADE) ~= nil then QMADE = {} end
  HEADC, TAILC = {}, {}
end

-- Writes back what this call changed in memory, all fields of the state
-- hash, with one HSET (in slices well inside unpack's limit: a call may
-- touch 1,000 queues): open tail chunks, new leases, queue records and meta
-- fields. A script that changed any of them calls this (or finish) before
-- it returns; read-only scripts need not.
local function flush()
  created_flush()
  release_slots()
  local args = flush_items()
  -- (Emptied as it is read, here and in flush_meta and records_args: a
  -- table made anew each call is work for the allocator and the collector.)
  local gone = nil
  for f, v in pairs(DEFERRED) do
    if v == false then
      gone = gone or {}
      gone[#gone + 1] = f
    else
      args[#args + 1] = f
      args[#args + 1] = v
    end
    DEFERRED[f] = nil
  end
  flush_meta(records_args(args))
  for i = 1, #args, 2000 do
    rcall('HSET', K_STATE, unpack(args, i, mmin(i + 1999, #args)))
  end
  for i = 1, gone and #gone or 0, 2000 do
    rcall('HDEL', K_STATE, unpack(gone, i, mmin(i + 1999, #gone)))
  end
end

-- The end of a writing script: everything written back, one idle worker
-- woken if the call may have made work ready.
local function finish(woke, result)
  flush()
  if woke then signal() end
  return result
end
