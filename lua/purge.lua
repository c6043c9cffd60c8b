--[[
  purge: drops every item queued in one queue, at once: a crawl's domain
  that has had its quota of pages, whose queued URLs would otherwise each
  wait for a rate slot only to be skipped. Its leases and delayed retries
  are left as they are (they end as they would), and so are its limits,
  counters and place: it is parked until items come again.

  KEYS: the arena key block (lua/includes/keys.lua).
  ARGV[1]  queue name

  Returns the number of items dropped (0 for a queue that does not exist).
  Errors: WEIR_BAD_ARGS.
]]
--@include "arena"

argc(1, 'queue')
local name = str_arg(1, 'queue name', MAX_NAME_BYTES, false)
local qid = qid_of(name)
if not qid then return 0 end
local st = qfetch(qid)
if st.q == 0 then return 0 end
local n = drop_items(qid, st)
mincr('queued', -n)
finish(activate(qid, now_us()))
return n
