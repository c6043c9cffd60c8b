import { randomBytes } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import { bad, checkDedupe, checkInt, checkItems, checkName, checkRate, checkReason } from './checks.js';
import { unlinkNamespace } from './clear.js';
import { RedisClock } from './clock.js';
import { Coalescer } from './coalesce.js';
import { enqueueCalls, type EnqueueRequest } from './enqueue-batch.js';
import { arenaKey, arenaKeys, arenaNamespace, validateArenaName } from './keys.js';
import { DEFAULTS, LIMITS } from './limits.js';
import { decodeDead, decodeDequeue, decodeExtend, decodeOutcome, decodeRetry, decodeStats, type StatsReply } from './replies.js';
import { ScriptRunner, type ScriptName } from './scripts.js';
import type { ArenaStats, DeadItem, DequeueOptions, DequeueResult, FairQueueOptions, Lease, LeaseOutcome, QueueClientCounters, QueueLimit, QueuePage, QueueStats, RetryOptions, TakeOptions } from './types.js';
import { Waiting } from './waiting.js';

/** A dequeue's result, and the outcome of the commit it carried, if it carried one. */
type TakeStep = DequeueResult & { committed?: LeaseOutcome };


/**
 * The rate-limited, fair, leased fan-in queue. Every scheduling decision is
 * made inside Redis by the scripts in lua/; this class checks arguments,
 * calls the scripts by SHA (batching concurrent calls) and decodes their
 * replies. It holds no schedule of its own, so any number of instances in
 * any number of processes share one schedule per arena.
 */
export class FairQueue {
  readonly prefix: string;
  readonly leaseMs: number;
  readonly counters: QueueClientCounters = { dequeues: 0, emptyDequeues: 0, leases: 0, wakeups: 0 };
  /** Redis's clock as seen from this process (for acting at a fixed offset from a slot). */
  readonly clock = new RedisClock();
  private readonly scripts: ScriptRunner;
  private blocker: Redis | Cluster | undefined;
  private readonly ownsBlocker: boolean;
  private readonly waiting: Waiting;
  // Batches are keyed by JSON arrays: no separator a queue name could contain.
  // A dequeue request may carry a lease token to commit first (commitAndTake).
  private readonly dequeues = new Coalescer<string | null, TakeStep>((key, reqs) => {
    const [arena, leaseMs, woken, aheadMs] = JSON.parse(key) as [string, number, boolean, number];
    return this.dequeueBatch(arena, { leaseMs, woken, aheadMs }, reqs.length, reqs);
  }, LIMITS.maxPerCall);
  private readonly enqueues = new Coalescer<EnqueueRequest, number>((key, reqs) => this.enqueueBatch(key, reqs), 256);
  private readonly commits = new Coalescer<string, LeaseOutcome>(
    async (arena, tokens) => ((await this.run('commit', arena, tokens)) as unknown[]).map(decodeOutcome),
    LIMITS.maxPerCall,
  );

  constructor(
    private readonly client: Redis | Cluster,
    options: FairQueueOptions = {},
  ) {
    this.prefix = options.prefix ?? DEFAULTS.prefix;
    this.leaseMs = options.leaseMs ?? DEFAULTS.leaseMs;
    checkInt('leaseMs', this.leaseMs, 1, LIMITS.maxLeaseMs);
    this.blocker = options.blockingClient;
    this.ownsBlocker = !options.blockingClient;
    this.scripts = new ScriptRunner(client);
    this.waiting = new Waiting(() => this.blockingClient(), (arena) => arenaKey(this.prefix, arena, 'wake'), this.counters);
  }

  private run(name: ScriptName, arena: string, args: (string | number)[]): Promise<unknown> {
    return this.scripts.run(name, arenaKeys(this.prefix, arena), args);
  }

  private blockingClient(): Redis | Cluster {
    if (!this.blocker) {
      this.blocker = this.client.duplicate();
      // Its connection errors surface through the waits (and the main client's commands).
      this.blocker.on('error', () => undefined);
    }
    return this.blocker;
  }

  /** Creates queues or changes their limits; returns how many were created. */
  async setLimits(arena: string, limits: Record<string, QueueLimit>, options: { maxAttempts?: number } = {}): Promise<number> {
    validateArenaName(arena);
    const maxAttempts = options.maxAttempts === undefined ? '' : checkInt('maxAttempts', options.maxAttempts, 1, LIMITS.maxAttempts);
    const specs: (string | number)[][] = [];
    for (const [queue, limit] of Object.entries(limits)) {
      checkName('queue name', queue);
      const rate = checkRate(queue, limit?.rate);
      const cap = checkInt(`maxInFlight of queue ${queue}`, limit.maxInFlight ?? 0, 0, LIMITS.maxInFlight);
      specs.push([queue, rate, cap]);
    }
    let created = 0;
    for (let i = 0; i === 0 || i < specs.length; i += LIMITS.maxPerCall) {
      const chunk = specs.slice(i, i + LIMITS.maxPerCall);
      created += Number(await this.run('setLimits', arena, [maxAttempts, chunk.length, ...chunk.flat()]));
    }
    return created;
  }

  /** Gives the arena its dedupe bitmap (allocated now, at full size). Returns false when it already had this one. */
  async configureDedupe(arena: string, config: { bits: number; hashes: number }): Promise<boolean> {
    checkInt('bits', config.bits, 512, LIMITS.maxDedupeBits);
    if (config.bits % 512 !== 0) bad('bits must be a multiple of 512');
    checkInt('hashes', config.hashes, 1, LIMITS.maxHashes);
    return Number(await this.run('configureDedupe', arena, [config.bits, config.hashes])) === 1;
  }

  /**
   * How many bits of the arena's dedupe bitmap are set: counted by enqueue
   * as it sets them, so O(1); an arena configured before that count was kept
   * is counted with BITCOUNT (O(size)).
   */
  async dedupeBitsSet(arena: string): Promise<number> {
    const counted = await this.client.hget(arenaKey(this.prefix, arena, 'meta'), 'dedupeSet');
    return counted === null ? this.client.bitcount(arenaKey(this.prefix, arena, 'dedupe')) : Number(counted);
  }

  /**
   * Appends items to the tail of a queue. With `dedupe`, item i is enqueued
   * only if not all of `dedupe[i]`'s bits were already set in the arena's
   * bitmap, and its bits are set in the same atomic step. Returns how many
   * were enqueued. Concurrent enqueues of one arena made in one turn of the
   * event loop, to any queues, share script calls (a crawled page's links to
   * every domain go in one), of at most 1,000 items each; each item is still
   * all-or-nothing, and each queue's order is kept.
   */
  async enqueue(arena: string, queue: string, items: readonly string[], options: { dedupe?: readonly (readonly number[])[] } = {}): Promise<number> {
    validateArenaName(arena);
    checkName('queue name', queue);
    const k = checkDedupe(options.dedupe, items.length);
    checkItems(items);
    if (items.length === 0) return 0;
    return this.enqueues.add(JSON.stringify([arena, k]), { queue, items, dedupe: options.dedupe });
  }

  /**
   * Sends one coalesced batch in calls of at most 1,000 items, each call's
   * items grouped by queue (in order within each); returns each request's
   * count of new items.
   */
  private async enqueueBatch(key: string, reqs: EnqueueRequest[]): Promise<number[]> {
    const [arena, k] = JSON.parse(key) as [string, number];
    const counts = reqs.map(() => 0);
    for (const call of enqueueCalls(reqs, k, LIMITS.maxPerCall)) {
      const flags = String(await this.run('enqueue', arena, call.args));
      call.requestOf.forEach((req, j) => {
        if (flags[j] === '1') counts[req] = (counts[req] ?? 0) + 1;
      });
    }
    return counts;
  }

  /**
   * One scheduling step: a lease on the next item by the fair, rate-limited
   * order, or how long to wait. Concurrent calls for the same arena made in
   * one turn of the event loop are served by one script call. With
   * `aheadMs`, a slot up to that far ahead may be served now: the lease's
   * servedAt (and localServedAt) is then in the future, and the caller must
   * not act on it before then.
   */
  async dequeue(arena: string, options: DequeueOptions = {}): Promise<DequeueResult> {
    validateArenaName(arena);
    const o = this.dequeueOptions(options);
    return this.dequeues.add(JSON.stringify([arena, o.leaseMs, o.woken, o.aheadMs]), null);
  }

  /** Up to `count` leases in one script call, served turn by turn as single calls would be. */
  async dequeueMany(arena: string, count: number, options: DequeueOptions = {}): Promise<DequeueResult[]> {
    checkInt('count', count, 1, LIMITS.maxPerCall);
    return this.dequeueBatch(arena, this.dequeueOptions(options), count);
  }

  private dequeueOptions(options: DequeueOptions): Required<DequeueOptions> {
    return {
      leaseMs: checkInt('leaseMs', options.leaseMs ?? this.leaseMs, 1, LIMITS.maxLeaseMs),
      woken: options.woken === true,
      aheadMs: checkInt('aheadMs', options.aheadMs ?? 0, 0, LIMITS.maxAheadMs),
    };
  }

  /** `commits[i]`: a token request i commits first, or null. */
  private async dequeueBatch(arena: string, o: Required<DequeueOptions>, count: number, commits: readonly (string | null)[] = []): Promise<TakeStep[]> {
    const base = randomBytes(12).toString('base64url');
    const sentAt = performance.now();
    const tokens = commits.filter((t): t is string => t !== null);
    const args = [base, o.leaseMs, o.woken ? '1' : '0', count, this.waiting.nextPromise(arena), Math.round(o.aheadMs * 1000), ...tokens];
    const reply = decodeDequeue(await this.run('dequeue', arena, args));
    this.clock.sample(reply.nowMs, sentAt, performance.now());
    this.counters.dequeues++;
    const results: DequeueResult[] = reply.leases.map((l) => ({ lease: { arena, ...l, localServedAt: this.clock.toLocal(l.servedAt) }, waitMs: 0 }));
    this.counters.leases += results.length;
    if (results.length === 0) this.counters.emptyDequeues++;
    const waitMs = reply.waitUs === null ? null : reply.waitUs / 1000;
    this.waiting.noteReply(arena, waitMs === null ? null : this.clock.toLocal(reply.nowMs) + waitMs, reply.promised);
    while (results.length < count) results.push({ lease: null, waitMs });
    let t = 0;
    return results.map((r, i) => (commits[i] ? { ...r, committed: reply.committed[t++] ?? 'stale' } : r));
  }

  /**
   * Dequeues, waiting as long as it takes: on a local timer for a known
   * next-eligible time, on the arena's wake list when only new work can
   * help. Resolves null only when `signal` aborts.
   */
  async take(arena: string, options: TakeOptions = {}): Promise<Lease | null> {
    const { leaseMs = this.leaseMs, aheadMs = 0 } = options;
    return this.waiting.take(arena, (woken) => this.dequeue(arena, { leaseMs, woken, aheadMs }), options.signal);
  }

  /**
   * Ends `lease` as done and takes the next lease, as commit() then take()
   * would, but the commit goes in the first dequeue call: a worker that
   * finishes one item and wants the next pays one script call, not two. That
   * first call is made at once, whatever the last reply said about waiting.
   * `committed` settles when it returns; `next` as take's would.
   */
  commitAndTake(lease: Lease, options: TakeOptions = {}): { committed: Promise<LeaseOutcome>; next: Promise<Lease | null> } {
    validateArenaName(lease.arena);
    if (options.signal?.aborted) {
      const committed = this.commit(lease);
      return { committed, next: committed.then(() => null) };
    }
    const { leaseMs = this.leaseMs, aheadMs = 0 } = options;
    const o = this.dequeueOptions({ leaseMs, aheadMs });
    let token: string | null = lease.token;
    let settle: { resolve: (r: LeaseOutcome) => void; reject: (e: unknown) => void } | undefined;
    const committed = new Promise<LeaseOutcome>((resolve, reject) => (settle = { resolve, reject }));
    const step = async (woken: boolean): Promise<DequeueResult> => {
      const carried = token;
      token = null;
      try {
        const r = await this.dequeues.add(JSON.stringify([lease.arena, o.leaseMs, woken, o.aheadMs]), carried);
        if (carried) settle?.resolve(r.committed ?? 'stale');
        return r;
      } catch (err) {
        if (carried) settle?.reject(err);
        throw err;
      }
    };
    const next = this.waiting.take(lease.arena, step, options.signal, true).then(async (l) => {
      // (Stopped before any call: the commit still goes.)
      if (token) settle?.resolve(await this.commit(lease));
      return l;
    });
    // Either may be awaited first: the other's failure is not "unhandled" meanwhile.
    committed.catch(() => undefined);
    next.catch(() => undefined);
    return { committed, next };
  }

  /** Ends a lease as done. Commits of one arena made in one turn of the event loop go in one script call. */
  async commit(lease: Lease): Promise<LeaseOutcome> {
    validateArenaName(lease.arena);
    return this.commits.add(lease.arena, lease.token);
  }

  /** Extends a lease to `ms` from now (Redis time); updates `lease.expiresAt`. */
  async extend(lease: Lease, ms: number = this.leaseMs): Promise<LeaseOutcome> {
    checkInt('ms', ms, 1, LIMITS.maxLeaseMs);
    const expiresAt = decodeExtend(await this.run('extend', lease.arena, [lease.token, ms]));
    if (expiresAt === null) return 'stale';
    lease.expiresAt = expiresAt;
    return 'ok';
  }

  /** Hands a lease back unfinished: head of its queue, no attempt counted. */
  async release(lease: Lease): Promise<LeaseOutcome> {
    return decodeOutcome(await this.run('release', lease.arena, [lease.token]));
  }

  /** Tries the item again later; 'dead' when its attempts ran out. */
  async retry(lease: Lease, options: RetryOptions = {}): Promise<LeaseOutcome | 'dead'> {
    const delayMs = checkInt('delayMs', options.delayMs ?? 0, 0, LIMITS.maxDelayMs);
    const count = options.countAttempt === false ? '0' : '1';
    const args: (string | number)[] = [lease.token, delayMs, checkReason(options.reason ?? ''), count];
    if (options.item !== undefined) {
      checkItems([options.item]);
      args.push(options.item);
    }
    return decodeRetry(await this.run('retry', lease.arena, args));
  }

  /** Sends the item straight to the dead letter. */
  async fail(lease: Lease, reason: string): Promise<LeaseOutcome> {
    return decodeOutcome(await this.run('fail', lease.arena, [lease.token, checkReason(reason)]));
  }

  /** No dequeue from `queue` for `ms` from now (Redis time); a later end wins. Returns the end, ms since the epoch. */
  async pause(arena: string, queue: string, ms: number): Promise<number> {
    checkName('queue name', queue);
    checkInt('ms', ms, 0, LIMITS.maxDelayMs);
    return Number(await this.run('pause', arena, [queue, ms, '']));
  }

  /**
   * Moves the end of a pause this caller set (`pause` returned `end`) to
   * `ms` from now, earlier or later, unless another pause has moved it since.
   * Returns the pause's end now.
   */
  async repause(arena: string, queue: string, end: number, ms: number): Promise<number> {
    checkName('queue name', queue);
    checkInt('ms', ms, 0, LIMITS.maxDelayMs);
    checkInt('end', end, 0, Number.MAX_SAFE_INTEGER);
    return Number(await this.run('pause', arena, [queue, ms, end]));
  }

  /** An operator's stop of one queue, or of the whole arena when `queue` is omitted. Leases out are untouched. */
  async hold(arena: string, queue?: string): Promise<void> {
    if (queue !== undefined) checkName('queue name', queue);
    await this.run('hold', arena, ['1', queue ?? '']);
  }

  async unhold(arena: string, queue?: string): Promise<void> {
    if (queue !== undefined) checkName('queue name', queue);
    await this.run('hold', arena, ['0', queue ?? '']);
  }

  /** A page of the dead letter, oldest first. */
  async dead(arena: string, options: { offset?: number; count?: number } = {}): Promise<DeadItem[]> {
    const offset = checkInt('offset', options.offset ?? 0, 0, LIMITS.maxOffset);
    const count = checkInt('count', options.count ?? 100, 1, LIMITS.maxPerCall);
    return decodeDead(await this.run('dead', arena, [offset, count]));
  }

  /** Moves up to `count` of the oldest dead items back to their queues, bypassing dedupe. */
  async requeueDead(arena: string, count: number): Promise<number> {
    checkInt('count', count, 1, Number.MAX_SAFE_INTEGER);
    let moved = 0;
    while (moved < count) {
      const n = Number(await this.run('requeueDead', arena, [Math.min(LIMITS.maxPerCall, count - moved)]));
      moved += n;
      if (n === 0) break;
    }
    return moved;
  }

  /** Arena stats, in constant time. */
  async stats(arena: string): Promise<ArenaStats> {
    return (await this.page(arena, 1, 0)).arena;
  }

  /** Per-queue stats, a page at a time (queues in creation order). */
  async queueStats(arena: string, options: { cursor?: number | null; count?: number } = {}): Promise<QueuePage> {
    const count = checkInt('count', options.count ?? 100, 1, LIMITS.maxStatsPage);
    const r = await this.page(arena, options.cursor ?? 1, count);
    return { queues: r.queues, cursor: r.cursor };
  }

  /** Every queue's stats, paging through queueStats (bounded: 500,000 queues). */
  async allQueueStats(arena: string): Promise<QueueStats[]> {
    const all: QueueStats[] = [];
    let cursor: number | null = 1;
    for (let i = 0; cursor !== null && i < 1000; i++) {
      const page = await this.queueStats(arena, { cursor, count: LIMITS.maxStatsPage });
      all.push(...page.queues);
      cursor = page.cursor;
    }
    return all;
  }

  private async page(arena: string, cursor: number, count: number): Promise<StatsReply> {
    checkInt('cursor', cursor, 1, LIMITS.maxOffset);
    return decodeStats(await this.run('stats', arena, [cursor, count]));
  }

  /**
   * The name of a key of the arena's own, for data kept beside the queue
   * (a crawler's robots.txt cache, say): the arena's prefix and hash tag, so
   * it lives in the arena's Cluster slot and `clear` deletes it too.
   */
  key(arena: string, name: string): string {
    return arenaNamespace(this.prefix, arena) + name;
  }

  /** Deletes every key of the arena, the queue's and those made with key(), in bounded batches. Returns how many. */
  async clear(arena: string): Promise<number> {
    return unlinkNamespace(this.client, arenaNamespace(this.prefix, arena));
  }

  /** Deletes the queue's own keys of the arena (UNLINK: Redis frees big keys in the background). */
  async destroy(arena: string): Promise<void> {
    await this.client.unlink(...arenaKeys(this.prefix, arena));
  }

  /** Stops local waits and closes the blocking connection this queue opened. The main client is the caller's. */
  async close(): Promise<void> {
    this.waiting.close();
    if (this.blocker && this.ownsBlocker) {
      this.blocker.disconnect();
      this.blocker = undefined;
    }
    await Promise.resolve();
  }
}
