import { randomBytes } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import { Coalescer } from './coalesce.js';
import { QueueArgumentError } from './errors.js';
import { arenaKey, arenaKeys, validateArenaName } from './keys.js';
import { ScriptRunner } from './scripts.js';
import { RedisClock } from './clock.js';
import { sleep } from './sleep.js';
import { WakeListener } from './wake.js';

/** Limits as enforced by the scripts (lua/includes/arena.lua); checked here first too. */
export const LIMITS = {
  maxItemBytes: 65536,
  maxNameBytes: 256,
  maxReasonBytes: 1024,
  maxItemsPerCall: 1000,
  maxQueuesPerCall: 1000,
  maxHashes: 64,
  minRate: 0.000001,
  maxRate: 10_000_000,
  maxLeaseMs: 86_400_000,
  maxAttempts: 1000,
} as const;

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
} as const;

export type Rate = number | 'unlimited';

export interface QueueLimit {
  /** Serves per second, fractional allowed, or 'unlimited'. Never served twice less than 1/rate apart. */
  rate: Rate;
  /** Leases of this queue out at once; absent or 0 means no cap. */
  maxInFlight?: number;
}

export interface Lease {
  readonly arena: string;
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
   * RedisClock). Lets a client act at a fixed offset from its slot.
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
}

export interface DeadItem {
  queue: string;
  item: string;
  reason: string;
  attempts: number;
  /** When it was dead-lettered, ms since the epoch (Redis time). */
  at: number;
}

export interface ArenaTotals {
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

export interface QueueFigures {
  name: string;
  rate: Rate;
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
  queues: QueueFigures[];
  /** Pass back to get the next page; null after the last. */
  cursor: number | null;
}

export interface TakeOptions {
  leaseMs?: number;
  signal?: AbortSignal;
}

/** Counts of this client's calls, for benchmarks and metrics. */
export interface QueueClientCounters {
  dequeues: number;
  emptyDequeues: number;
  leases: number;
  wakeups: number;
}

export interface FairQueueOptions {
  prefix?: string;
  leaseMs?: number;
  /** A client for blocking waits; by default one is made with `client.duplicate()` when first needed. */
  blockingClient?: Redis | Cluster;
}

interface EnqueueRequest {
  items: readonly string[];
  dedupe: readonly (readonly number[])[] | undefined;
}

function bad(message: string, code: ConstructorParameters<typeof QueueArgumentError>[0] = 'WEIR_BAD_ARGS'): never {
  throw new QueueArgumentError(code, message);
}

function checkInt(name: string, v: unknown, min: number, max: number): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    bad(`${name} must be an integer in [${min}, ${max}], got ${String(v)}`);
  }
  return v;
}

function checkName(kind: string, name: unknown): string {
  if (typeof name !== 'string' || name.length === 0 || Buffer.byteLength(name) > LIMITS.maxNameBytes) {
    bad(`${kind} must be a non-empty string of at most ${LIMITS.maxNameBytes} bytes`, 'WEIR_BAD_NAME');
  }
  return name;
}

function checkRate(queue: string, rate: unknown): string {
  if (rate === 'unlimited') return 'unlimited';
  if (typeof rate !== 'number' || !Number.isFinite(rate) || rate < LIMITS.minRate || rate > LIMITS.maxRate) {
    bad(
      `rate of queue ${queue} must be a number in [${LIMITS.minRate}, ${LIMITS.maxRate}] or 'unlimited', got ${String(rate)}`,
      'WEIR_BAD_RATE',
    );
  }
  // 17 significant digits: the script gets the exact double.
  return rate.toPrecision(17);
}

function checkReason(reason: string): string {
  if (Buffer.byteLength(reason) > LIMITS.maxReasonBytes) {
    return Buffer.from(reason).subarray(0, LIMITS.maxReasonBytes).toString('utf8').replace(/\uFFFD+$/, '');
  }
  return reason;
}

const num = (v: unknown): number => (v === null || v === undefined || v === '' ? 0 : Number(v));

/**
 * The rate-limited, fair, leased fan-in queue. Every scheduling decision is
 * made inside Redis by the scripts in lua/; this class validates arguments,
 * calls the scripts by SHA and shapes their replies. It holds no schedule
 * state of its own, so any number of instances in any number of processes
 * share one schedule per arena.
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
  private readonly listeners = new Map<string, WakeListener>();
  /** Per arena, from the last dequeue reply: when work may be ready (local ms; null = only after a wake-up). */
  private readonly nextWork = new Map<string, { at: number | null }>();
  /** Per arena, queue ids the script promised this client, oldest first. */
  private readonly promises = new Map<string, string[]>();
  private readonly dequeues = new Coalescer<null, DequeueResult>((key, reqs) => {
    const [arena, leaseMs, woken] = key.split('\n');
    return this.dequeueBatch(arena as string, Number(leaseMs), woken === '1', reqs.length);
  }, LIMITS.maxItemsPerCall);
  private readonly enqueues = new Coalescer<EnqueueRequest, number>((key, reqs) => this.enqueueBatch(key, reqs), 256);
  private readonly commits = new Coalescer<string, LeaseOutcome>(
    async (arena, tokens) => ((await this.run('commit', arena, tokens)) as unknown[]).map(outcome),
    LIMITS.maxItemsPerCall,
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
  }

  private run(name: Parameters<ScriptRunner['run']>[0], arena: string, args: (string | number)[]): Promise<unknown> {
    return this.scripts.run(name, arenaKeys(this.prefix, arena), args);
  }

  /** Creates queues or changes their limits; returns how many were created. */
  async setLimits(
    arena: string,
    limits: Record<string, QueueLimit>,
    options: { maxAttempts?: number } = {},
  ): Promise<number> {
    validateArenaName(arena);
    const maxAttempts =
      options.maxAttempts === undefined ? '' : checkInt('maxAttempts', options.maxAttempts, 1, LIMITS.maxAttempts);
    const specs: (string | number)[][] = [];
    for (const [queue, limit] of Object.entries(limits)) {
      checkName('queue name', queue);
      const rate = checkRate(queue, limit?.rate);
      const cap = checkInt(`maxInFlight of queue ${queue}`, limit.maxInFlight ?? 0, 0, 1_000_000);
      specs.push([queue, rate, cap]);
    }
    let created = 0;
    for (let i = 0; i === 0 || i < specs.length; i += LIMITS.maxQueuesPerCall) {
      const chunk = specs.slice(i, i + LIMITS.maxQueuesPerCall);
      created += num(await this.run('setLimits', arena, [maxAttempts, chunk.length, ...chunk.flat()]));
    }
    return created;
  }

  /** Gives the arena its dedupe bitmap (allocated now, at full size). Returns false when it already had this one. */
  async configureDedupe(arena: string, config: { bits: number; hashes: number }): Promise<boolean> {
    checkInt('bits', config.bits, 512, 2 ** 32);
    if (config.bits % 512 !== 0) bad('bits must be a multiple of 512');
    checkInt('hashes', config.hashes, 1, LIMITS.maxHashes);
    return num(await this.run('configureDedupe', arena, [config.bits, config.hashes])) === 1;
  }

  /**
   * Appends items to the tail of a queue. With `dedupe`, item i is enqueued
   * only if not all of `dedupe[i]`'s bits were already set in the arena's
   * bitmap, and its bits are set in the same atomic step. Returns how many
   * were enqueued. Batches over 1,000 items are sent in several calls, and
   * concurrent enqueues to one queue made in one turn of the event loop share
   * calls; each item is still all-or-nothing, and order is kept.
   */
  async enqueue(arena: string, queue: string, items: readonly string[], options: { dedupe?: readonly (readonly number[])[] } = {}): Promise<number> {
    validateArenaName(arena);
    checkName('queue name', queue);
    const dedupe = options.dedupe;
    let k = 0;
    if (dedupe) {
      if (dedupe.length !== items.length) bad(`dedupe has ${dedupe.length} entries for ${items.length} items`);
      k = dedupe[0]?.length ?? 0;
      if (k < 1 || k > LIMITS.maxHashes) bad(`each dedupe entry must have 1..${LIMITS.maxHashes} bit positions`);
      for (const d of dedupe) {
        if (d.length !== k) bad('every dedupe entry must have the same number of bit positions');
        for (const p of d) if (!Number.isInteger(p) || p < 0) bad(`bit position ${p} is not a non-negative integer`);
      }
    }
    for (const [i, item] of items.entries()) {
      if (typeof item !== 'string') bad(`item ${i} is not a string`);
      if (Buffer.byteLength(item) > LIMITS.maxItemBytes) bad(`item ${i} is over ${LIMITS.maxItemBytes} bytes`, 'WEIR_ITEM_TOO_LARGE');
    }
    if (items.length === 0) return 0;
    return this.enqueues.add(`${arena}\n${queue}\n${k}`, { items, dedupe });
  }

  /** Sends one coalesced batch in calls of at most 1,000 items; returns each request's count of new items. */
  private async enqueueBatch(key: string, reqs: EnqueueRequest[]): Promise<number[]> {
    const [arena, queue, kStr] = key.split('\n') as [string, string, string];
    const items = reqs.flatMap((r) => r.items);
    const positions = Number(kStr) > 0 ? reqs.flatMap((r) => r.dedupe ?? []) : undefined;
    let flags = '';
    for (let i = 0; i < items.length; i += LIMITS.maxItemsPerCall) {
      const chunk = items.slice(i, i + LIMITS.maxItemsPerCall);
      const args: (string | number)[] = [queue, chunk.length, Number(kStr), ...chunk];
      if (positions) for (const d of positions.slice(i, i + LIMITS.maxItemsPerCall)) args.push(...d);
      flags += String(await this.run('enqueue', arena, args));
    }
    let at = 0;
    return reqs.map((r) => {
      let n = 0;
      for (let j = 0; j < r.items.length; j++) if (flags[at + j] === '1') n++;
      at += r.items.length;
      return n;
    });
  }

  /**
   * One scheduling step: a lease on the next item by the fair, rate-limited
   * order, or how long to wait. Concurrent calls for the same arena made in
   * one turn of the event loop are served by one script call.
   */
  async dequeue(arena: string, options: { leaseMs?: number; woken?: boolean } = {}): Promise<DequeueResult> {
    validateArenaName(arena);
    const leaseMs = checkInt('leaseMs', options.leaseMs ?? this.leaseMs, 1, LIMITS.maxLeaseMs);
    return this.dequeues.add(`${arena}\n${leaseMs}\n${options.woken ? '1' : '0'}`, null);
  }

  /** Up to `count` leases in one script call, served turn by turn as single calls would be. */
  async dequeueMany(arena: string, count: number, options: { leaseMs?: number; woken?: boolean } = {}): Promise<DequeueResult[]> {
    checkInt('count', count, 1, LIMITS.maxItemsPerCall);
    const leaseMs = checkInt('leaseMs', options.leaseMs ?? this.leaseMs, 1, LIMITS.maxLeaseMs);
    return this.dequeueBatch(arena, leaseMs, options.woken === true, count);
  }

  private async dequeueBatch(arena: string, leaseMs: number, woken: boolean, count: number): Promise<DequeueResult[]> {
    const base = randomBytes(12).toString('base64url');
    // Pass back a queue the script promised this client (see lua/dequeue.lua).
    const promised = this.promises.get(arena)?.shift() ?? '';
    const sentAt = performance.now();
    const r = (await this.run('dequeue', arena, [base, leaseMs, woken ? '1' : '0', count, promised])) as unknown[];
    const head = r[0] as [number, string, string];
    this.clock.sample(num(head[2]) / 1000, sentAt, performance.now());
    const redisNowLocal = this.clock.toLocal(num(head[2]) / 1000);
    this.counters.dequeues++;
    const results: DequeueResult[] = [];
    for (const raw of r.slice(1) as unknown[][]) {
      results.push({
        lease: {
          arena,
          token: raw[0] as string,
          queue: raw[1] as string,
          item: raw[2] as string,
          attempt: num(raw[3]),
          expiresAt: num(raw[4]),
          servedAt: num(raw[5]) / 1000,
          localServedAt: this.clock.toLocal(num(raw[5]) / 1000),
          intervalMs: num(raw[6]) / 1000,
        },
        waitMs: 0,
      });
    }
    this.counters.leases += results.length;
    if (results.length === 0) this.counters.emptyDequeues++;
    const [waitUs, nextPromised] = head;
    const waitMs = waitUs < 0 ? null : waitUs / 1000;
    // The script's word on when the next call may find work, and which
    // queue it promised this client meanwhile (see take() and lua/dequeue.lua).
    this.nextWork.set(arena, { at: waitMs === null ? null : redisNowLocal + waitMs });
    if (nextPromised !== '') {
      const list = this.promises.get(arena) ?? [];
      // A promise lapses within CLAIM_GRACE (20 ms): a few are plenty to keep.
      if (list.push(nextPromised) > 8) list.shift();
      this.promises.set(arena, list);
    }
    if (results.length < count) {
      const rest: DequeueResult = { lease: null, waitMs };
      while (results.length < count) results.push(rest);
    }
    return results;
  }

  /**
   * Dequeues, waiting as long as it takes: on a local timer for a known
   * next-eligible time, on the arena's wake list when only new work can
   * help. Resolves null only when `signal` aborts.
   */
  async take(arena: string, options: TakeOptions = {}): Promise<Lease | null> {
    const { signal } = options;
    let woken = false;
    while (!signal?.aborted) {
      // Wait first if the last reply said nothing is ready yet: no empty call
      // is spent to learn what the script already told us.
      const hint = woken ? undefined : this.nextWork.get(arena);
      if (hint) {
        const waitMs = hint.at === null ? null : hint.at - performance.now();
        if (waitMs === null || waitMs > 0) {
          woken = await this.waitFor(arena, waitMs, signal);
          if (signal?.aborted) break;
          if (!woken && this.nextWork.get(arena) === hint) this.nextWork.delete(arena);
        }
      }
      const r = await this.dequeue(arena, { leaseMs: options.leaseMs ?? this.leaseMs, woken });
      woken = false;
      if (r.lease) return r.lease;
    }
    return null;
  }

  /** Sleeps on a local timer for short waits; blocks on the wake list for long or open-ended ones. */
  private async waitFor(arena: string, waitMs: number | null, signal?: AbortSignal): Promise<boolean> {
    if (waitMs !== null && waitMs <= DEFAULTS.timerWaitMaxMs) {
      await sleep(waitMs, signal);
      return false;
    }
    const woken = await this.listener(arena).wait(waitMs ?? DEFAULTS.idleCheckMs, signal);
    if (woken) this.counters.wakeups++;
    return woken;
  }

  private listener(arena: string): WakeListener {
    let l = this.listeners.get(arena);
    if (!l) {
      if (!this.blocker) {
        this.blocker = this.client.duplicate();
        // Its connection errors surface through the waits (and the main client's commands).
        this.blocker.on('error', () => undefined);
      }
      l = new WakeListener(this.blocker, arenaKey(this.prefix, arena, 'wake'));
      this.listeners.set(arena, l);
    }
    return l;
  }

  /** Ends a lease as done. Commits of one arena made in one turn of the event loop go in one script call. */
  async commit(lease: Lease): Promise<LeaseOutcome> {
    validateArenaName(lease.arena);
    return this.commits.add(lease.arena, lease.token);
  }

  /** Extends a lease to `ms` from now (Redis time); updates `lease.expiresAt`. */
  async extend(lease: Lease, ms: number = this.leaseMs): Promise<LeaseOutcome> {
    checkInt('ms', ms, 1, LIMITS.maxLeaseMs);
    const r = num(await this.run('extend', lease.arena, [lease.token, ms]));
    if (r === 0) return 'stale';
    lease.expiresAt = r;
    return 'ok';
  }

  /** Hands a lease back unfinished: head of its queue, no attempt counted. */
  async release(lease: Lease): Promise<LeaseOutcome> {
    return outcome(await this.run('release', lease.arena, [lease.token]));
  }

  /** Tries the item again later; 'dead' when its attempts ran out. */
  async retry(lease: Lease, options: RetryOptions = {}): Promise<LeaseOutcome | 'dead'> {
    const delayMs = checkInt('delayMs', options.delayMs ?? 0, 0, 31_536_000_000);
    const r = num(
      await this.run('retry', lease.arena, [
        lease.token,
        delayMs,
        checkReason(options.reason ?? ''),
        options.countAttempt === false ? '0' : '1',
      ]),
    );
    return r === 2 ? 'dead' : outcome(r);
  }

  /** Sends the item straight to the dead letter. */
  async fail(lease: Lease, reason: string): Promise<LeaseOutcome> {
    return outcome(await this.run('fail', lease.arena, [lease.token, checkReason(reason)]));
  }

  /** No dequeue from `queue` for `ms` from now (Redis time); a later end wins. Returns the end, ms since the epoch. */
  async pause(arena: string, queue: string, ms: number): Promise<number> {
    checkName('queue name', queue);
    checkInt('ms', ms, 0, 31_536_000_000);
    return num(await this.run('pause', arena, [queue, ms]));
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
    const offset = checkInt('offset', options.offset ?? 0, 0, 1e15);
    const count = checkInt('count', options.count ?? 100, 1, 1000);
    const rows = (await this.run('dead', arena, [offset, count])) as string[];
    return rows.map((r) => {
      const d = JSON.parse(r) as Partial<DeadItem>;
      return { queue: String(d.queue), item: String(d.item), reason: String(d.reason ?? ''), attempts: num(d.attempts), at: num(d.at) };
    });
  }

  /** Moves up to `count` of the oldest dead items back to their queues, bypassing dedupe. */
  async requeueDead(arena: string, count: number): Promise<number> {
    checkInt('count', count, 1, Number.MAX_SAFE_INTEGER);
    let moved = 0;
    while (moved < count) {
      const n = num(await this.run('requeueDead', arena, [Math.min(1000, count - moved)]));
      moved += n;
      if (n === 0) break;
    }
    return moved;
  }

  /** Arena totals, in constant time. */
  async stats(arena: string): Promise<ArenaTotals> {
    return (await this.page(arena, 1, 0)).totals;
  }

  /** Per-queue figures, a page at a time (queues in creation order). */
  async queueStats(arena: string, options: { cursor?: number | null; count?: number } = {}): Promise<QueuePage> {
    const count = checkInt('count', options.count ?? 100, 1, 500);
    const r = await this.page(arena, options.cursor ?? 1, count);
    return { queues: r.queues, cursor: r.cursor };
  }

  /** Every queue's figures, paging through queueStats (bounded: 500,000 queues). */
  async allQueueStats(arena: string): Promise<QueueFigures[]> {
    const all: QueueFigures[] = [];
    let cursor: number | null = 1;
    for (let i = 0; cursor !== null && i < 1000; i++) {
      const page = await this.queueStats(arena, { cursor, count: 500 });
      all.push(...page.queues);
      cursor = page.cursor;
    }
    return all;
  }

  private async page(arena: string, cursor: number, count: number): Promise<{ totals: ArenaTotals } & QueuePage> {
    checkInt('cursor', cursor, 1, 1e15);
    const [now, t, next, rows] = (await this.run('stats', arena, [cursor, count])) as [string, string[], number, string[][]];
    const bits = num(t[9]);
    const totals: ArenaTotals = {
      queued: num(t[0]),
      leased: num(t[1]),
      delayed: num(t[2]),
      done: num(t[3]),
      dead: num(t[4]),
      enqueued: num(t[5]),
      queues: num(t[6]),
      held: t[7] === '1',
      maxAttempts: num(t[8]),
      dedupe: bits > 0 ? { bits, hashes: num(t[10]) } : null,
      drained: num(t[0]) + num(t[1]) + num(t[2]) === 0,
      exists: (t[11] ?? '') !== '',
      expired: num(t[12]),
      now: num(now),
    };
    const queues = rows.map(
      (f): QueueFigures => ({
        name: f[0] ?? '',
        rate: f[1] === 'unlimited' ? 'unlimited' : num(f[1]),
        maxInFlight: num(f[2]),
        queued: num(f[3]),
        leased: num(f[4]),
        delayed: num(f[5]),
        done: num(f[6]),
        dead: num(f[7]),
        nextEligibleAt: num(f[8]),
        pausedUntil: num(f[9]),
        held: f[10] === '1',
      }),
    );
    return { totals, queues, cursor: next === 0 ? null : Number(next) };
  }

  /** A script that does nothing, called exactly like the real ones (the benchmark's ceiling). */
  async noop(arena: string, args: (string | number)[] = []): Promise<number> {
    return num(await this.run('noop', arena, args));
  }

  /** Deletes every key of the arena (UNLINK: Redis frees big keys in the background). */
  async destroy(arena: string): Promise<void> {
    await this.client.unlink(...arenaKeys(this.prefix, arena));
  }

  /** Stops local waits and closes the blocking connection this queue opened. The main client is the caller's. */
  async close(): Promise<void> {
    for (const l of this.listeners.values()) l.close();
    this.listeners.clear();
    if (this.blocker && this.ownsBlocker) {
      this.blocker.disconnect();
      this.blocker = undefined;
    }
    await Promise.resolve();
  }
}

function outcome(r: unknown): LeaseOutcome {
  return num(r) === 1 ? 'ok' : 'stale';
}

