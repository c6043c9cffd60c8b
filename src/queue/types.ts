import type { Cluster, Redis } from 'ioredis';

/** A connected ioredis client: one Redis, or a Cluster. */
export type RedisClient = Redis | Cluster;

export type Rate = number | 'unlimited';

export interface QueueLimit {
  /** Serves per second, fractional allowed, or 'unlimited'. Never served twice less than 1/rate apart. */
  rate: Rate;
  /** Leases of this queue out at once; absent or 0 means no cap. */
  maxInFlight?: number;
}

/** A shortest interval asked of queues by one source (setLimits' `floor`): each queue keeps the longest its sources ask. */
export interface FloorRequest {
  /** Who asks (the crawler: a site's origin, for its robots.txt Crawl-delay); 1..512 bytes, no newline, not '*'. */
  source: string;
  /** The interval, ms; 0 withdraws this source's floor. */
  ms: number;
}

export interface Lease {
  readonly arena: string;
  /** The hash tag of the arena's shard it came from (the arena's name when it has one shard): where its commit goes. */
  readonly shard: string;
  readonly token: string;
  readonly queue: string;
  readonly item: string;
  /** 1 on the first delivery; counts deliveries that counted as attempts, plus this one. */
  readonly attempt: number;
  /** Expiry in ms since the epoch, by Redis's clock. */
  expiresAt: number;
  /** When the scheduler served it: ms since the epoch with µs fraction, Redis's clock. */
  readonly servedAt: number;
  /**
   * The same moment on this process's performance.now() clock (see
   * RedisClock), as estimated when the lease arrived. A client that waits
   * for its slot should map servedAt again when it acts (clock.toLocal,
   * with clock.uncertaintyMs, which belong to the same estimate): an older
   * estimate may be off by more than the current uncertainty.
   */
  readonly localServedAt: number;
  /** The queue's interval between serves when this was served, ms (0 = unlimited). */
  readonly intervalMs: number;
}

export type DequeueResult =
  | { lease: Lease; waitMs: 0 }
  /** waitMs: until a queue may become eligible; null when only new work (enqueue, commit, unhold) can help. */
  | { lease: null; waitMs: number | null };

/** 'ok', or 'stale' when the lease had expired or was already ended: nothing changed. */
export type LeaseOutcome = 'ok' | 'stale';

export interface RetryOptions {
  /** Ms before the item may be served again; 0 puts it back at the head now. Default 0. */
  delayMs?: number;
  /** Kept as the item's last reason (shown in the dead letter). */
  reason?: string;
  /** Whether this delivery counts against maxAttempts. Default true. */
  countAttempt?: boolean;
  /** The item to requeue instead of the leased one (state carried across retries). */
  item?: string;
}

export interface DeadItem {
  queue: string;
  item: string;
  reason: string;
  attempts: number;
  /** When it was dead-lettered, ms since the epoch (Redis time). */
  at: number;
}

/** An arena's stats, kept by the scripts as counters: read in constant time. */
export interface ArenaStats {
  queued: number;
  leased: number;
  delayed: number;
  done: number;
  dead: number;
  enqueued: number;
  queues: number;
  held: boolean;
  maxAttempts: number;
  dedupe: { bits: number; hashes: number } | null;
  /** Nothing queued, leased or waiting for a retry. Dead-lettered items don't count. */
  drained: boolean;
  /** Whether the arena has ever been written to. */
  exists: boolean;
  /** Leases that expired and went back (ever). */
  expired: number;
  /** Redis's clock, ms since the epoch. */
  now: number;
}

export interface EnqueueOptions {
  /** Per item, its bit positions in the arena's dedupe bitmap: an item whose bits were all set already is dropped. */
  dedupe?: readonly (readonly number[])[];
  /**
   * Each item's positions, when they all fall in one 512-bit block (a
   * blocked Bloom filter's), sent as that block: the script reads and
   * writes the item's 64 bytes (a GETRANGE, and a SETRANGE when it is new)
   * instead of setting each bit with BITFIELD. A fifth to nearly half fewer
   * instructions an item, for two commands an item where BITFIELD is one a
   * call: the crawler sends its links and start URLs so.
   */
  dedupeBlocks?: boolean;
  /** An unknown queue is created with these limits, in the same atomic step as its first items (once, however many callers race; a known queue keeps its own). */
  create?: QueueLimit;
  /** With `create`: a queue that exists tightens to those limits where they are stricter (a lower rate or cap), never looser. */
  lower?: boolean;
  /** Into the queue's front band: served before every item at its tail (the call's first item first). */
  front?: boolean;
}

/** How a request to a queue's site went, and the bounds its learned pace keeps (FairQueue.reportPace, lua/pace.lua). */
export interface PaceReport {
  /** How long the request took, ms. */
  ms: number;
  /** False for a 5xx, a 429, a timeout or a failed connection. */
  healthy: boolean;
  /** The target interval is this × the smoothed request time (Heritrix's delayFactor). */
  delayFactor: number;
  /** The longest interval the pace may reach, ms. */
  maxDelayMs: number;
}

/** One queue's stats. */
export interface QueueStats {
  name: string;
  /** As configured (setLimits, a Crawl-delay). */
  rate: Rate;
  /** In force now: the configured rate, or slower when the queue's pace learned one (reportPace). */
  pace: Rate;
  maxInFlight: number;
  queued: number;
  leased: number;
  delayed: number;
  done: number;
  dead: number;
  /** Earliest time (ms, Redis clock) it may be served, by its rate and any pause. */
  nextEligibleAt: number;
  pausedUntil: number;
  held: boolean;
}

export interface QueuePage {
  queues: QueueStats[];
  /** Pass back to get the next page; null after the last. */
  cursor: number | null;
}

export interface DequeueOptions {
  leaseMs?: number;
  /** The caller was woken by the wake list (it passes a wake-up on if more is ready). */
  woken?: boolean;
  /**
   * Serve a slot up to this many ms before it comes (0..1000, default 0):
   * the lease's servedAt is then the slot itself, in the future, and the
   * caller must not act before it. For callers that hold each lease to its
   * slot (the crawler's pacer): the call's own delay then costs no pace.
   */
  aheadMs?: number;
  /**
   * A send window, ms (0 = none, the default): the caller reports each
   * lease of a rate-limited queue with FairQueue.sent() as its request goes
   * out (or never will), and sends nothing more than this long after the
   * lease's servedAt. The queue's next slot waits for that report and is
   * counted from it (lua/sent.lua): from the actual send, on Redis's
   * clock. Unreported, the hold lapses one interval after the window.
   */
  sendWindowMs?: number;
}

export interface TakeOptions {
  leaseMs?: number;
  signal?: AbortSignal;
  /** See DequeueOptions.aheadMs: take then returns leases up to this early, and waits for slots as much less. */
  aheadMs?: number;
  /** See DequeueOptions.sendWindowMs. */
  sendWindowMs?: number;
}

/** Counts of this client's calls, for benchmarks and metrics. */
export interface QueueClientCounters {
  dequeues: number;
  emptyDequeues: number;
  leases: number;
  wakeups: number;
  /** Dedupe bitmap reads made before enqueues (seen-check.ts), and the items they found seen and left out. */
  seenReads: number;
  seenSkipped: number;
}

export interface FairQueueOptions {
  prefix?: string;
  leaseMs?: number;
  /** A client for blocking waits; by default one is made with `client.duplicate()` when first needed. */
  blockingClient?: RedisClient;
  /**
   * Most ms a dequeue, commit or enqueue may wait for others to share its
   * script call when calls of its kind have lately come less than that far
   * apart (0, the default: only calls made in the same turn of the event
   * loop share one). See src/queue/coalesce.ts.
   */
  lingerMs?: number;
  /**
   * Leases `take` and `commitAndTake` may ask for beyond their own, kept for
   * this client's next takes (src/queue/spares.ts): only ever from queues
   * without a rate that are due, so holding one breaks no slot. A take that
   * finds one spends no script call, and the commit it would have carried
   * rides on the next call to its shard (or goes alone within
   * DEFAULTS.commitRideMs). For a client with several lanes; 0 (the default)
   * for none.
   */
  spareLeases?: number;
  /**
   * reportSent's reports go on a connection of their own to each node that
   * gets no reply (OneWayCalls in src/queue/script-call.ts; true, the default). false: on the
   * client, replies read and dropped, for a proxy in front of Redis that
   * would pass CLIENT REPLY OFF on to a connection it shares.
   */
  replylessReports?: boolean;
}
