/**
 * The queue's limits: the one place they are written. The TypeScript API
 * checks arguments against them before a call; src/queue/scripts.ts
 * generates them into every Lua script (where it says `--@limits`, as
 * `local MAX_ITEM_BYTES = 65536` and so on), so the scripts check the same
 * numbers themselves.
 */
export const LIMITS = {
  maxItemBytes: 65536,
  maxNameBytes: 256,
  maxReasonBytes: 1024,
  /** A lease token: "<slot>|<id>:<qid>", slot and id each a dequeue call's token base (≤ 48 bytes) and ".<i>" (lua/includes/leases.lua). */
  maxTokenBytes: 128,
  /** Items, tokens or queues one script call takes (the API splits larger batches). */
  maxPerCall: 1000,
  /** Dedupe bit positions per item. */
  maxHashes: 64,
  /** Dedupe bitmap size, bits (a Redis string's largest size). */
  maxDedupeBits: 4_294_967_296,
  minRate: 0.000001,
  maxRate: 10_000_000,
  maxLeaseMs: 86_400_000,
  /** How far before its slot a lease may be served to a caller that holds it to the slot. */
  maxAheadMs: 1000,
  /**
   * A send window holds the next slot of queues with a longer interval than
   * this, ms (lua/sent.lua); faster queues are not held (a report's round
   * trip would cost them more than their whole interval, the most a gap
   * can be short by without it).
   */
  minReportedIntervalMs: 3,
  /** FairQueueOptions.lingerMs: a call waits at most this long for others to share its script call. */
  maxLingerMs: 100,
  /** FairQueueOptions.spareLeases: leases a take may ask for beyond its own. */
  maxSpareLeases: 64,
  /** Longest retry delay or pause: a year. */
  maxDelayMs: 31_536_000_000,
  maxAttempts: 1000,
  maxInFlight: 1_000_000,
  /** Largest offset or cursor a page may start at. */
  maxOffset: 1e15,
  /** Queues in one page of per-queue stats. */
  maxStatsPage: 500,
  /** How deep the busiest queues (by backlog or waiting) may be paged: a page ends within this rank. */
  maxStatsRank: 10_000,
  /** Shards one arena may have (src/queue/shards.ts). */
  maxShards: 1024,
} as const;

/**
 * Whether a dequeue with a send window holds this lease's queue for its
 * report (lua/serve.lua, sent.lua): a rate, and an interval over
 * minReportedIntervalMs. Leases of other queues need no report.
 */
export const holdsForReport = (lease: { intervalMs: number }): boolean => lease.intervalMs > LIMITS.minReportedIntervalMs;

export const DEFAULTS = {
  /** Key prefix; every key is `<prefix>:{<arena>}:<name>`. */
  prefix: 'weir',
  /** How long a dequeue's lease lasts unless committed, extended or handed back. */
  leaseMs: 60_000,
  /** Deliveries that count before an item goes to the dead letter. */
  maxAttempts: 5,
  /** Waits up to this long are slept on a local timer; longer ones block on the wake list. */
  timerWaitMaxMs: 250,
  /** How long `take` blocks for new work in an idle arena before dequeuing again to re-check. */
  idleCheckMs: 5000,
  /** A commit waiting to ride on the next dequeue to its shard (a lane took a spare lease) goes alone after this long. */
  commitRideMs: 20,
  /**
   * A turn's enqueue requests, this many or more from several callers, go as
   * two script calls cut between callers (coalesce.ts, halveFrom): 64
   * producers each awaiting one enqueue over 100 and 10,000 queues, 76.8k ->
   * 92.3k and 75.7k -> 85.6k items/s (the seed design 73.9k and 78.5k),
   * Redis CPU an item +0.4-0.6 µs; one enqueueAll (a page's links) stays one call.
   */
  enqueueHalveFrom: 32,
} as const;

const luaName = (key: string): string => key.replace(/([A-Z])/g, '_$1').toUpperCase();

/** The limits as Lua locals: `local MAX_ITEM_BYTES = 65536` ... and DEFAULT_MAX_ATTEMPTS. */
export function luaLimits(): string {
  const lines = Object.entries(LIMITS).map(([k, v]) => `local ${luaName(k)} = ${String(v)}`);
  lines.push(`local DEFAULT_MAX_ATTEMPTS = ${DEFAULTS.maxAttempts}`);
  return lines.join('\n');
}
