--[[
  The per-queue record: field "<qid>" of `queues` is struct.pack('<d' x 18)
  of the numbers below, followed by the queue's name. It is read once per
  call into a cache, changed in place, and written back once by
  flush_records(), however many of its numbers change.

    q     queued                   l     leased
    hc    head chunk number        ho    byte offset of the next item in it
    tc    tail chunk number        tn    items in the tail chunk
    tb    bytes in the tail chunk  fn    items in the front stack
    nx    µs before which it may not be served (rate)
    c     carried fraction of a µs of the interval
    cap   max in flight (0 = no cap)
    p     paused until µs          iv    interval between serves, µs (0 = unlimited)
    hold  1 when held              d     delayed (retry timers)
    done  committed                dead  dead-lettered (now in the dead letter)
    cl    µs until which its next slot is promised to a waiting caller
]]
--@include "meta"

local QFIELDS = { 'q', 'l', 'hc', 'ho', 'tc', 'tn', 'tb', 'fn', 'nx', 'c', 'cap', 'p', 'iv', 'hold', 'd', 'done', 'dead', 'cl' }
local QFMT = '<' .. string.rep('d', #QFIELDS)
local QFIXED = #QFIELDS * 8

local QCACHE = {}
local QDIRTY = {}

local function qnew(name)
  local st = { name = name }
  for _, k in ipairs(QFIELDS) do st[k] = 0 end
  return st
end

local function qstate(qid)
  local st = QCACHE[qid]
  if st then return st end
  local rec = redis.call('HGET', K_QUEUES, qid)
  if not rec then
    raise('WEIR_BAD_ARGS', 'queue id ' .. tostring(qid) .. ' has no record')
  end
  local v = { struct.unpack(QFMT, rec) }
  st = { name = string.sub(rec, QFIXED + 1) }
  for i, k in ipairs(QFIELDS) do st[k] = v[i] end
  QCACHE[qid] = st
  return st
end

local function qdirty(qid, st)
  QCACHE[qid] = st
  QDIRTY[qid] = true
end

local function flush_records()
  for qid in pairs(QDIRTY) do
    local st = QCACHE[qid]
    local v = {}
    for i, k in ipairs(QFIELDS) do v[i] = st[k] end
    redis.call('HSET', K_QUEUES, qid, struct.pack(QFMT, unpack(v)) .. st.name)
  end
  QDIRTY = {}
end

local function qid_of(name)
  return redis.call('HGET', K_QIDS, name)
end
