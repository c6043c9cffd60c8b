import { randomBytes } from 'node:crypto';
import { LeaseEnds } from './lease-ends.js';
import { checkInt } from './checks.js';
import { ShardClocks, type RedisClock } from './clock.js';
import { Coalescer } from './coalesce.js';
import { byCallKey, callKeyOf, checkedEnqueue, enqueueCalls, type EnqueueRequest } from './enqueue-batch.js';
import { shardKey, validateArenaName } from './keys.js';
import { DEFAULTS, LIMITS } from './limits.js';
import { decodeDequeue, decodeExtend, decodeOutcome } from './replies.js';
import type { DequeueOptions, DequeueResult, FairQueueOptions, Lease, LeaseOutcome, EnqueueOptions, QueueClientCounters, TakeOptions, RedisClient } from './types.js';
import { ReplicaWait } from './replicas.js';
import { SeenCheck } from './seen-check.js';
import { RidingCommits, SpareLeases } from './spares.js';
import { Waiting } from './waiting.js';

/** A dequeue's result, and the outcome of the commit it carried, if it carried one. */
type TakeStep = DequeueResult & { committed?: LeaseOutcome };
/** A take merged into a shard's dequeue call, with a token to commit first or null. */
interface TakeRequest {
  token: string | null;
}

/**
 * The rate-limited, fair, leased fan-in queue. Every scheduling decision is
 * made inside Redis by the scripts in lua/; this class checks arguments,
 * calls the scripts by SHA (batching concurrent calls) and decodes their
 * replies. It holds no schedule of its own, so any number of instances in
 * any number of processes share one schedule per arena.
 *
 * An arena may be split into shards (src/queue/shards.ts), each queue in
 * one; this class sends each call to its queue's shard, spreads takes over
 * the shards, and sums arena-wide figures over them.
 */
export class FairQueue extends LeaseEnds {
  readonly leaseMs: number;
  readonly counters: QueueClientCounters = { dequeues: 0, emptyDequeues: 0, leases: 0, wakeups: 0, seenReads: 0, seenSkipped: 0 };
  /** Redis's clocks as seen from this process (clock.ts): any shard's, and each shard's (clockOf). */
  private readonly clocks = new ShardClocks();
  readonly clock = this.clocks.any;
  /** Per shard tag, the connection its wake list is waited on with (blocking: one each). */
  private readonly blockers = new Map<string, RedisClient>();
  private readonly given: RedisClient | undefined;
  private readonly waiting: Waiting;
  private readonly replicas = new ReplicaWait(this.client);
  /** Leases whose commit frees their queue (served at its in-flight cap with items waiting). */
  private readonly freeing = new WeakSet<Lease>();
  // Batches are keyed by JSON arrays: no separator a queue name could contain.
  // A dequeue request may carry a lease token to commit first (commitAndTake).
  private readonly dequeues: Coalescer<TakeRequest, TakeStep>;
  private readonly enqueues: Coalescer<EnqueueRequest, number>;
  private readonly commits: Coalescer<string, LeaseOutcome>;
  /** Leases served beyond those asked for, for the next takes (spareLeases), and the commits of lanes that took one. */
  private readonly spareLeases: number;
  private readonly spares = new SpareLeases();
  /** Reads the dedupe bitmap before enqueues that drop many items as seen. */
  private readonly seenCheck = new SeenCheck(this.counters);
  private readonly riding: RidingCommits;

  constructor(client: RedisClient, options: FairQueueOptions = {}) {
    super(client, options.prefix ?? DEFAULTS.prefix, options.replylessReports ?? true);
    const linger = checkInt('lingerMs', options.lingerMs ?? 0, 0, LIMITS.maxLingerMs);
    this.dequeues = new Coalescer<TakeRequest, TakeStep>(
      async (key, reqs) => {
        const [arena, tag, shards, leaseMs, woken, aheadMs, sendWindowMs, spares] = JSON.parse(key) as [string, string, number, number, boolean, number, number, boolean];
        return this.dequeueBatch({ arena, tag, shards }, { leaseMs, woken, aheadMs, sendWindowMs }, reqs.length, reqs, spares);
      },
      LIMITS.maxPerCall,
      linger,
    );
    this.enqueues = new Coalescer<EnqueueRequest, number>((key, reqs) => this.enqueueBatch(key, reqs), 256, linger, DEFAULTS.enqueueHalveFrom);
    this.commits = new Coalescer<string, LeaseOutcome>(
      async (tag, tokens) => ((await this.run('commit', tag, tokens)) as unknown[]).map(decodeOutcome),
      LIMITS.maxPerCall,
      linger,
    );
    this.spareLeases = checkInt('spareLeases', options.spareLeases ?? 0, 0, LIMITS.maxSpareLeases);
    this.riding = new RidingCommits((tag, token) => this.commits.add(tag, token), DEFAULTS.commitRideMs);
    this.leaseMs = options.leaseMs ?? DEFAULTS.leaseMs;
    checkInt('leaseMs', this.leaseMs, 1, LIMITS.maxLeaseMs);
    this.given = options.blockingClient;
    this.waiting = new Waiting((tag) => this.blockingClient(tag), (tag) => shardKey(this.prefix, tag, 'wake'), this.counters);
  }

  /** The caller's blocking client serves the first shard waited on; every other shard gets its own duplicate. */
  private blockingClient(tag: string): RedisClient {
    let b = this.blockers.get(tag);
    if (!b) {
      const mine = this.given !== undefined && ![...this.blockers.values()].includes(this.given);
      b = mine ? (this.given) : this.client.duplicate();
      // Its connection errors surface through the waits (and the main client's commands).
      if (!mine) b.on('error', () => undefined);
      this.blockers.set(tag, b);
    }
    return b;
  }

  /**
   * Appends items to the tail of a queue. With `dedupe`, item i is enqueued
   * only if not all of `dedupe[i]`'s bits were already set in the arena's
   * bitmap, and its bits are set in the same atomic step. Returns how many
   * were enqueued. Concurrent enqueues of one arena made in one turn of the
   * event loop, to any queues, share script calls (a crawled page's links to
   * every domain go in one), of at most 1,000 items each; each item is still
   * all-or-nothing, and each queue's order is kept. Options: EnqueueOptions
   * (`create` makes an unknown queue atomically, once; `front` goes first).
   */
  async enqueue(arena: string, queue: string, items: readonly string[], options: EnqueueOptions = {}): Promise<number> {
    validateArenaName(arena);
    const { req, k, opts } = checkedEnqueue(queue, items, options);
    if (items.length === 0) return 0;
    return this.placing(arena, (layout) => this.enqueues.add(JSON.stringify([this.tagOf(layout, queue), layout.shards, k, opts]), req));
  }

  /**
   * Many queues' enqueues at once, each as enqueue does it (all checked
   * before any is sent; sharing script calls with each other and with
   * concurrent calls); each one's count of new items, in order. No promise
   * or async step a queue: a kickoff's batch of start URLs may be 10,000
   * queues' enqueues.
   */
  async enqueueAll(arena: string, groups: readonly { queue: string; items: readonly string[]; options?: EnqueueOptions }[]): Promise<number[]> {
    validateArenaName(arena);
    const checked = groups.map((g) => checkedEnqueue(g.queue, g.items, g.options ?? {}));
    return this.placing(arena, async (layout) => {
      const counts = new Array<number>(checked.length).fill(0); // (Not groups': a caller may let them go meanwhile.)
      const calls = byCallKey(checked, callKeyOf(layout.shards, checked, (queue) => this.tagOf(layout, queue)));
      await Promise.all(
        [...calls].map(async ([key, b]) => {
          const got = await this.enqueues.addMany(key, b.reqs);
          b.at.forEach((i, j) => (counts[i] = got[j] ?? 0));
        }),
      );
      return counts;
    });
  }

  /**
   * Sends one coalesced batch in calls of at most 1,000 items, each call's
   * items grouped by queue (in order within each); returns each request's
   * count of new items.
   */
  private async enqueueBatch(key: string, reqs: EnqueueRequest[]): Promise<number[]> {
    const [tag, shards, k, opts] = JSON.parse(key) as [string, number, number | string, (string | number)[]];
    const counts = reqs.map(() => 0);
    // (Items already seen left out first, while enough of them are: seen-check.ts.)
    const sent = k !== 0 ? await this.seenCheck.leaveOutSeen(this.client, shardKey(this.prefix, tag, 'dedupe'), tag, shards, reqs) : reqs;
    // The calls go out together (one connection keeps their order): Redis works through them while this process does what comes next.
    const calls = enqueueCalls(sent, k, LIMITS.maxPerCall, [shards], opts);
    const replies = await Promise.all(calls.map((call) => this.run('enqueue', tag, call.args)));
    await this.replicas.after(tag);
    calls.forEach((call, i) => {
      const flags = String(replies[i]);
      call.requestOf.forEach((req, j) => {
        if (flags[j] === '1') counts[req] = (counts[req] ?? 0) + 1;
      });
    });
    if (k !== 0) this.seenCheck.note(tag, reqs, counts);
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
    const layout = await this.layout(arena);
    const o = this.dequeueOptions(options);
    // Shard after shard until one serves (an arena of one shard: one call), from the one whose turn it is.
    let waitMs: number | null = null;
    for (const tag of this.waiting.inTurn(layout.tags)) {
      const r = await this.dequeueOn(arena, tag, layout.shards, o, null);
      if (r.lease) return r;
      if (r.waitMs !== null && (waitMs === null || r.waitMs < waitMs)) waitMs = r.waitMs;
    }
    return { lease: null, waitMs };
  }

  /** The clock of the shard `tag` (a lease's `shard`): its slots' times map to this process's clock by it. */
  readonly clockOf = (tag: string): RedisClock => this.clocks.of(tag);

  /** One shard's dequeue call, merged with others to the same shard in this turn of the event loop. */
  private dequeueOn(arena: string, tag: string, shards: number, o: Required<DequeueOptions>, carried: string | null, spares = false): Promise<TakeStep> {
    return this.dequeues.add(JSON.stringify([arena, tag, shards, o.leaseMs, o.woken, o.aheadMs, o.sendWindowMs, spares && this.spareLeases > 0]), { token: carried });
  }

  /** Up to `count` leases in one script call per shard, served turn by turn as single calls would be. */
  async dequeueMany(arena: string, count: number, options: DequeueOptions = {}): Promise<DequeueResult[]> {
    checkInt('count', count, 1, LIMITS.maxPerCall);
    const layout = await this.layout(arena);
    const leases: DequeueResult[] = [];
    let last: DequeueResult[] = [];
    for (const tag of layout.tags) {
      if (leases.length >= count) break;
      last = await this.dequeueBatch({ arena, tag, shards: layout.shards }, this.dequeueOptions(options), count - leases.length);
      leases.push(...last.filter((r) => r.lease));
    }
    return [...leases, ...last.filter((r) => !r.lease).slice(0, count - leases.length)];
  }

  private dequeueOptions(options: DequeueOptions): Required<DequeueOptions> {
    return {
      leaseMs: checkInt('leaseMs', options.leaseMs ?? this.leaseMs, 1, LIMITS.maxLeaseMs),
      woken: options.woken === true,
      aheadMs: checkInt('aheadMs', options.aheadMs ?? 0, 0, LIMITS.maxAheadMs),
      sendWindowMs: checkInt('sendWindowMs', options.sendWindowMs ?? 0, 0, LIMITS.maxLeaseMs),
    };
  }

  /**
   * `count` leases; with `reqs`, one result per request (its lease if it
   * takes one, its commit's outcome if it carries a token). With `spares`,
   * up to spareLeases more kept for the next takes, and the commits riding
   * to this shard go along.
   */
  private async dequeueBatch(shard: { arena: string; tag: string; shards: number }, o: Required<DequeueOptions>, count: number, reqs: readonly TakeRequest[] = [], spares = false): Promise<TakeStep[]> {
    const { arena, tag } = shard;
    const base = randomBytes(12).toString('base64url');
    const sentAt = performance.now();
    const tokens = reqs.map((r) => r.token).filter((t): t is string => t !== null);
    // (None while a take of this client waits for work: it would not see them.)
    const spare = spares && !this.waiting.anySleeping ? Math.min(LIMITS.maxPerCall - count, Math.max(0, this.spareLeases - this.spares.count(arena))) : 0;
    const riders = this.riding.board(tag, LIMITS.maxPerCall - tokens.length);
    // (With several shards, ask for the ready count: the shard's weight in takes.)
    const args = [base, o.leaseMs, o.woken ? '1' : '0', count, this.waiting.nextPromise(tag), Math.round(o.aheadMs * 1000), shard.shards > 1 ? '1' : '', spare, o.sendWindowMs, ...tokens, ...riders.tokens];
    let reply: ReturnType<typeof decodeDequeue>;
    try {
      reply = decodeDequeue(await this.run('dequeue', tag, args));
    } catch (err) {
      riders.fail(err);
      throw err;
    }
    riders.settle(reply.committed.slice(tokens.length));
    const clock = this.clocks.sample(tag, reply.nowMs, sentAt, performance.now());
    this.counters.dequeues++;
    const served: DequeueResult[] = reply.leases.map(({ capped, ...l }) => {
      const lease: Lease = { arena, shard: tag, ...l, localServedAt: clock.toLocal(l.servedAt) };
      if (capped) this.freeing.add(lease);
      return { lease, waitMs: 0 };
    });
    const results = served.slice(0, count);
    this.spares.put(served.slice(count).map((r) => r.lease as Lease));
    this.counters.leases += served.length;
    if (served.length === 0) this.counters.emptyDequeues++;
    const waitMs = reply.waitUs === null ? null : reply.waitUs / 1000;
    this.waiting.noteReply(tag, waitMs === null ? null : clock.toLocal(reply.nowMs) + waitMs, reply.promised, reply.readyCount);
    while (results.length < count) results.push({ lease: null, waitMs });
    if (reqs.length === 0) return results;
    let t = 0;
    return reqs.map((req, k) => {
      const r = results[k] as DequeueResult;
      return req.token ? { ...r, committed: reply.committed[t++] ?? 'stale' } : r;
    });
  }

  /**
   * Dequeues, waiting as long as it takes: on a local timer for a known
   * next-eligible time, on the arena's wake list when only new work can
   * help. Resolves null only when `signal` aborts.
   */
  async take(arena: string, options: TakeOptions = {}): Promise<Lease | null> {
    const spare = this.spareOf(arena, options.signal);
    if (spare) return spare;
    const { leaseMs = this.leaseMs, aheadMs = 0, sendWindowMs = 0 } = options;
    const layout = () => this.layout(arena);
    return this.waiting.take(
      async () => (await layout()).tags,
      async (tag, woken) => this.dequeueOn(arena, tag, (await layout()).shards, this.dequeueOptions({ leaseMs, woken, aheadMs, sendWindowMs }), null, true),
      options.signal,
    );
  }

  /**
   * Ends `lease` as done and takes the next lease, as commit() then take()
   * would, but the commit goes in the next dequeue call when that call goes
   * at once to the lease's shard (work may be ready there, or the commit
   * itself frees some): a worker that finishes one item and wants the next
   * pays one script call, not two. Otherwise the commit rides on the next
   * dequeue to its shard within commitRideMs, or goes alone then (below).
   * `committed` settles when it returns; `next` as take's would.
   */
  commitAndTake(lease: Lease, options: TakeOptions = {}): { committed: Promise<LeaseOutcome>; next: Promise<Lease | null> } {
    validateArenaName(lease.arena);
    const callless = this.commitAndTakeWithoutCall(lease, options.signal);
    if (callless) return callless;
    const { leaseMs = this.leaseMs, aheadMs = 0, sendWindowMs = 0 } = options;
    const o = this.dequeueOptions({ leaseMs, aheadMs, sendWindowMs });
    let token: string | null = lease.token;
    let settle: { resolve: (r: LeaseOutcome) => void; reject: (e: unknown) => void } | undefined;
    const committed = new Promise<LeaseOutcome>((resolve, reject) => (settle = { resolve, reject }));
    // A call to the lease's shard carries the commit (only the first can).
    const step = async (tag: string, woken: boolean): Promise<DequeueResult> => {
      const carried = tag === lease.shard ? token : null;
      if (carried) token = null;
      try {
        const r = await this.dequeueOn(lease.arena, tag, (await this.layout(lease.arena)).shards, { ...o, woken }, carried, true);
        if (carried) settle?.resolve(r.committed ?? 'stale');
        return r;
      } catch (err) {
        if (carried) settle?.reject(err);
        throw err;
      }
    };
    const tags = async (): Promise<readonly string[]> => (await this.layout(lease.arena)).tags;
    const next = tags()
      .then((all) => {
        // The next call goes where the weighted turn says among shards that
        // may have work now (with several shards: else a lane would stay on
        // its lease's shard for good, and queues on crowded shards would get
        // less). When none may, it goes to the lease's shard if the commit
        // may free work there: this lease left its queue at its cap, or the
        // queue has no rate (only a cap or emptiness holds its next item
        // back, and a cap any later lease reached this commit frees too:
        // the freed place is this lane's at once, no idle lane woken), or
        // the shard waits for new work anyway. Not when the next work is a
        // rate slot at a known time: the commit rides on the next call to
        // its shard, and no empty dequeue is spent to carry it.
        const carry = lease.intervalMs === 0 || this.freeing.has(lease) || this.waiting.awaitsNewWork(lease.shard);
        const first = this.waiting.choose(all) ?? (carry ? lease.shard : undefined);
        if (first !== lease.shard) {
          // (On the next dequeue to its shard, any lane's, within commitRideMs;
          // at once if it frees its queue's cap, as a spare-taker's does.)
          token = null;
          const commit = this.freeing.has(lease) ? this.commits.add(lease.shard, lease.token) : this.riding.add(lease.shard, lease.token);
          commit.then(
            (r) => settle?.resolve(r),
            (e: unknown) => settle?.reject(e),
          );
        }
        return this.waiting.take(tags, step, options.signal, first);
      })
      .then(async (l) => {
        // (Stopped before any call: the commit still goes.)
        if (token) settle?.resolve(await this.commit(lease));
        return l;
      });
    // Either may be awaited first: the other's failure is not "unhandled" meanwhile.
    committed.catch(() => undefined);
    next.catch(() => undefined);
    return { committed, next };
  }

  /**
   * commitAndTake when it makes no dequeue call: stopped (the commit goes
   * alone), or a spare held (taken at once; the commit rides on the next
   * call to its shard, unless it frees a queue's in-flight cap: that goes
   * now, with a take). Else null.
   */
  private commitAndTakeWithoutCall(lease: Lease, signal?: AbortSignal): { committed: Promise<LeaseOutcome>; next: Promise<Lease | null> } | null {
    if (signal?.aborted) {
      const committed = this.commit(lease);
      return { committed, next: committed.then(() => null) };
    }
    const spare = this.freeing.has(lease) ? null : this.spareOf(lease.arena, signal);
    if (!spare) return null;
    const committed = this.riding.add(lease.shard, lease.token);
    committed.catch(() => undefined);
    return { committed, next: Promise.resolve(spare) };
  }

  /** A spare lease of `arena` still young enough to hand out, or null (spares too old are handed back). */
  private spareOf(arena: string, signal?: AbortSignal): Lease | null {
    if (this.spareLeases === 0 || signal?.aborted) return null;
    // (A failed hand-back leaves the lease to expire: its item comes back then.)
    return this.spares.take(arena, this.clock.toRedis(performance.now()), (old) => old.forEach((l) => void this.release(l).catch(() => undefined)));
  }

  /** Ends a lease as done. Commits of one arena made in one turn of the event loop go in one script call. */
  async commit(lease: Lease): Promise<LeaseOutcome> {
    validateArenaName(lease.arena);
    return this.commits.add(lease.shard, lease.token);
  }

  /** Extends a lease to `ms` from now (Redis time); updates `lease.expiresAt`. */
  async extend(lease: Lease, ms: number = this.leaseMs): Promise<LeaseOutcome> {
    checkInt('ms', ms, 1, LIMITS.maxLeaseMs);
    const expiresAt = decodeExtend(await this.run('extend', lease.shard, [lease.token, ms]));
    if (expiresAt === null) return 'stale';
    lease.expiresAt = expiresAt;
    return 'ok';
  }

  /** Stops local waits and closes the connections this queue opened (blocking waits, send reports). The main client is the caller's. */
  async close(): Promise<void> {
    // (Calls lingering for company go now, while the client is the caller's to close; spares go back to their queues' heads.)
    const spares = this.spares.drain();
    this.riding.flushAll();
    this.dequeues.flushAll();
    this.commits.flushAll();
    this.enqueues.flushAll();
    this.waiting.close();
    for (const b of this.blockers.values()) if (b !== this.given) b.disconnect();
    this.blockers.clear();
    this.scripts.close();
    await Promise.all(spares.map((l) => this.release(l).catch(() => 'stale')));
  }
}
