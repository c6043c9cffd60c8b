--[[
  dequeue: lease up to `count` items by the arena's fair, rate-limited schedule
  (and up to `spare` more from queues without a rate).

  KEYS: the arena key block (lua/includes/keys.lua).
  ARGV[1]  lease token base chosen by the client (8..48 bytes, random, no ':'
           or '|'); lease i of this call gets the id "<base>.<i>" (its token:
           leases.lua); a base already used replays that call's answer (its
           leases still held)
  ARGV[2]  lease duration in ms (1..MAX_LEASE_MS)
  ARGV[3]  '1' when the caller was woken by the wake list (it then passes the
           wake-up on if more work is ready), else '0'
  ARGV[4]  count: most leases to hand out (1..MAX_PER_CALL)
  ARGV[5]  the queue id this caller was promised by its last reply, or ''
  ARGV[6]  ahead: µs (0..MAX_AHEAD_MS*1000) before a slot this caller may be
           served it; the lease's servedAt is then the slot itself (later than
           now), and the caller must not act before it (see "Ahead")
  ARGV[7]  '1' to be told how many queues are ready (the reply's readyCount:
           a client spreading its calls over an arena's shards weighs each
           shard by it), else ''
  ARGV[8]  spare: most leases to hand out beyond `count`, each from a queue
           without a rate that is due now (count + spare <= MAX_PER_CALL):
           a client keeps them for its next takes (serve.lua)
  ARGV[9]  send window: ms (0..MAX_LEASE_MS), 0 for none. With a window
           the caller reports each rate-limited lease's send (sent.lua),
           and the queue's next slot waits for that report (serve.lua,
           "Send window")
  ARGV[10..] lease tokens to commit first (0..MAX_PER_CALL): a worker done
           with one URL ends its lease and asks for the next in one call

  Steps, all on Redis time: reap expired leases, commit the tokens given,
  replay (a resent call gets its own leases back; only a call none of
  whose commits took can be one), promote due retries, promote due queues,
  serve one item per turn of the round-robin, and reply (with a promise).
  A served queue goes back to the tail of the round-robin, or to `sched` at
  its next allowed time, so a batch is as fair and as polite as single calls.

  Fair turns: promote.lua. Ahead: serve.lua. Promises: promises.lua.

  Returns one flat list: waitUs, promised, nowUs, committed, readyCount, then
  each lease's eight fields, token, queue, item, attempt, expiresAtMs,
  servedAtUs, intervalUs, capped (serve.lua lease_reply); nowUs is
  Redis's clock, intervalUs the queue's interval (0 = unlimited), capped 1 when
  the serve left the queue at its in-flight cap with items waiting (the
  lease's commit will free it: a client carries that commit in its next
  dequeue rather than sending it alone). waitUs
  tells the caller when its next call may find work: 0 when more is ready
  now, else how long until something may become ready (a rate slot, a
  retry, a lease expiry), or -1 when nothing will without a new
  enqueue/commit/unhold (block on the wake list then). committed has a
  character per token of ARGV[10..]: '1' committed, '0' stale (as commit.lua);
  a replayed call reports them committed, the call it repeats having run.

  Errors: WEIR_BAD_ARGS, WEIR_SCHEMA.
]]
--@include "arena"

if #ARGV < 9 or #ARGV > 9 + MAX_PER_CALL then
  raise('WEIR_BAD_ARGS', 'expected 9 arguments (token leaseMs woken count promised ahead readyCount spare window) and up to ' .. MAX_PER_CALL .. ' tokens to commit, got ' .. #ARGV)
end
local base = str_arg(1, 'token', 48, false)
if #base < 8 then raise('WEIR_BAD_ARGS', 'token must be at least 8 bytes') end
if sfind(base, ':', 1, true) or sfind(base, '|', 1, true) then raise('WEIR_BAD_ARGS', "token must not hold ':' or '|'") end
local lease_ms = int_arg(2, 'leaseMs', 1, MAX_LEASE_MS)
local woken = ARGV[3] == '1'
local count = int_arg(4, 'count', 1, MAX_PER_CALL)
local promised = str_arg(5, 'promised', 20, true)
if promised ~= '' and not string.match(promised, '^%d+$') then raise('WEIR_BAD_ARGS', 'promised must be a queue id') end
local ahead = int_arg(6, 'ahead', 0, MAX_AHEAD_MS * 1000)
local want_ready = ARGV[7] == '1'
local spare = int_arg(8, 'spare', 0, MAX_PER_CALL - count)
local window = int_arg(9, 'window', 0, MAX_LEASE_MS) * 1000
local commits = {}
for i = 10, #ARGV do commits[#commits + 1] = str_arg(i, 'token', MAX_TOKEN_BYTES, false) end
-- The queues this call knows it will touch come with the meta fields, and
-- so does the slot a replay looks in first when none of the commits holds
-- one of its leases (serve.lua replay): a call without commits (a lane
-- woken, or starting) would otherwise spend an HGET finding it empty.
local parsed = prefetch_leases(commits, true)
if promised ~= '' then prefetch(promised, true) end
prefetch_field(base .. '.1')
ensure_schema()

local now = now_us()
-- (Expired leases are reaped there, first: what they make ready this call serves.)
local committed, freed = commit_leases(parsed, now)
-- A call resent after a lost reply finds its commits done already (by the
-- call it repeats): only a call none of whose commits took can be one, so
-- only such a call looks.
-- (The reply's flags made here as '1' and '0': joined as numbers, each
-- would be printed as a double.)
local any_committed = false
local committed_s = {}
for i, c in ipairs(committed) do
  if c == 1 then any_committed = true end
  committed_s[i] = c == 1 and '1' or '0'
end
-- (Printed once: the reply's clock, and the serve time of a lease served now.)
local now_s = fmt(now)
local again = not any_committed and replay(now, now_s, base, parsed, count + spare)
if again then
  again[4] = string.rep('1', #commits)
  flush()
  return again
end
local horizon = now + ahead
promote_due_retries(now)
promote_due_queues(horizon)
local held = mget('held') == '1'
-- (The reply's wait, promise, commits and ready count are filled in below, once the leases are in.)
local reply = { 0, '', now_s, '', -1 }
local leased, last_back = 0, nil
if not held then leased, last_back = serve(reply, now, now_s, horizon, base, count, spare, lease_ms, promised, window) end
-- Every lease asked for served, the last from an unlimited queue that went
-- straight back to the ready set (the call ended there): more is ready now,
-- and an unlimited queue is never promised, so the reply needs no look at
-- the schedule.
if not (leased >= count and last_back and last_back.iv == 0) then
  reply[1], reply[2] = wait_reply(now, not held, promised, ahead)
end
reply[4] = tconcat(committed_s)
-- (Those below +inf: `ready`'s keeper is no queue, schedule.lua.)
if want_ready then reply[5] = rcall('ZCOUNT', K_READY, '-inf', '(+inf') end
-- More is ready than this caller took: pass a wake-up on (when it was woken,
-- or its commits freed a queue's in-flight cap).
if ((leased > 0 and woken) or freed) and reply[1] == 0 then signal() end
flush()
return reply
