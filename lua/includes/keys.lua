--[[
  The arena's key layout: the one place it is written down.

  Every script receives the same 14 keys, in this order, all built by the
  client (src/queue/keys.ts, from the same list) and all sharing one hash
  tag, so every script runs unchanged on Redis Cluster. The tag is a shard's
  (src/queue/shards.ts): `{arena}` for an arena's first or only shard,
  `{arena~i}` (or `{arena~i~n}`) for the others; "the arena" below is the
  shard's part of it:

    KEYS[1]  meta      hash    key-schema 1 and 2 kept the meta fields here; now
                               only v = 4 (older scripts refuse the arena)
    KEYS[2]  queues    hash    the shard's state (K_STATE): its meta fields
                               (below), each queue's record "<qid>"
                               (record.lua), its rate as configured
                               "<qid>:rate" (none while the record's interval
                               says it: args.lua interval_rate), its floor
                               "<qid>:floor" (setLimits.lua), its learned pace
                               "<qid>:pace" (pace.lua) and its open
                               chunk "<qid>:t"
                               (items.lua), and the leases, "<base>.<i>" ->
                               "<qid>:<attempt>:<expiry µs>:<item>" (leases.lua)
    KEYS[3]  qids      hash    queue name -> qid, and one keeper field that is
                               no queue's name (record.lua QIDS_KEEPER)
    KEYS[4]  items     hash    a queue's sealed chunks "<qid>:<n>" and front entries "<qid>:f<k>" (items.lua)
    KEYS[5]  ready     zset    qid -> turn number: eligible queues, round-robin
                               order, and one keeper member at +inf
                               (schedule.lua ZSET_KEEPER; key-schema 4)
    KEYS[6]  sched     zset    qid -> µs when it becomes eligible (rate or
                               pause), and the same keeper as `ready`
    KEYS[7]  leases    hash    key-schema 2's leases, until the last of them ends
    KEYS[8]  lexp      zset    lease key -> µs when the lease expires, and one
                               keeper member at +inf (leases.lua LEXP_KEEPER)
    KEYS[9]  delayed   zset    token -> µs when a retried item is due
    KEYS[10] delaydata hash    token -> "<qid>:<attempts>:<reasonlen>:<reason><item>"
    KEYS[11] dead      list    JSON records {queue, item, reason, attempts, at}
    KEYS[12] wake      list    at most one token: "there may be work now"
    KEYS[13] dedupe    string  the dedupe bitmap
    KEYS[14] backlog   zset    qid -> its backlog's bucket (1: 16-31
                               queued, then one per power of two), every
                               queue with 16 or more (none with fewer: an
                               arena made before 2026-12-06 may still hold
                               some at 0, never read): an index of the
                               biggest backlogs (stats.lua 'top'), moved only
                               when a queue's count crosses a power of two
                               from 16 (record.lua)

  Why one hash for the state: a call reads the meta fields and the records
  of the queues it already knows (a commit's, a promise's) with one HMGET,
  and writes every field it changed (counters, records, open chunks, new
  leases) with one HSET. The field names cannot collide: meta fields are
  words, records digits, and only a lease key has a '.' in it.

  meta fields: v (key-schema version), qseq (last qid), turn (round-robin
  counter), queued, leased, delayed, done, dead, expired (leases that
  expired, ever), maxAttempts, held ('1' when the whole arena is held),
  dedupeBits, dedupeHashes, dedupeSpan (the arena-wide bitmap size bit
  positions are given in, when this shard holds a part of it: position p is
  bit p mod dedupeBits here), dedupeSet (bits of the bitmap set, counted as
  they are set), shards (the arena's shard count, when it has a layout:
  src/queue/shards.ts), reapat, delayat, schedat (lower bounds: meta.lua),
  oldleases ('1' while key-schema 2's leases hash may hold leases).

  Time is Redis TIME in integer microseconds (exact in a Lua double until
  2255). Numbers are written with string.format('%.0f'), never tostring,
  which would round them to 14 significant digits.
]]

-- This call's keys, bound by begin_call (arena.lua) before anything else runs.
local K_STATE, K_QIDS, K_ITEMS, K_READY, K_SCHED, K_LEXP
local K_DELAYED, K_DELAYDATA, K_DEAD, K_WAKE, K_DEDUPE, K_BACKLOG
-- (Read only to take an older arena on: meta.lua, leases.lua.)
local K_OLD_META, K_OLD_LEASES

local function bind_keys(keys)
  if #keys ~= 14 then
    error({ err = 'WEIR_BAD_ARGS expected the 14-key arena block, got ' .. #keys })
  end
  K_OLD_META, K_STATE, K_QIDS, K_ITEMS = keys[1], keys[2], keys[3], keys[4]
  K_READY, K_SCHED, K_OLD_LEASES, K_LEXP = keys[5], keys[6], keys[7], keys[8]
  K_DELAYED, K_DELAYDATA, K_DEAD = keys[9], keys[10], keys[11]
  K_WAKE, K_DEDUPE, K_BACKLOG = keys[12], keys[13], keys[14]
end
