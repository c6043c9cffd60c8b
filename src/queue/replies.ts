/**
 * The scripts' replies, decoded by named fields. Each script's reply shape
 * is written in its header (lua/<name>.lua); this is the one place the
 * TypeScript side reads them.
 */
import type { ArenaStats, DeadItem, LeaseOutcome, QueueStats } from './types.js';

const num = (v: unknown): number => (v === null || v === undefined || v === '' ? 0 : Number(v));

/** commit, release, fail: 1 = ok, 0 = stale. */
export function decodeOutcome(r: unknown): LeaseOutcome {
  return num(r) === 1 ? 'ok' : 'stale';
}

/** retry: 1 = ok, 2 = dead-lettered, 0 = stale. */
export function decodeRetry(r: unknown): LeaseOutcome | 'dead' {
  return num(r) === 2 ? 'dead' : decodeOutcome(r);
}

/** extend: the new expiry in ms, or 0 when stale. */
export function decodeExtend(r: unknown): number | null {
  const v = num(r);
  return v === 0 ? null : v;
}

/** A lease as dequeue sends it, before the client adds its own clock's view. */
export interface RawLease {
  token: string;
  queue: string;
  item: string;
  attempt: number;
  expiresAt: number;
  /** ms since the epoch with the µs fraction (Redis clock). */
  servedAt: number;
  intervalMs: number;
  /** The serve left its queue at its in-flight cap with items waiting: committing this lease frees it. */
  capped: boolean;
}

export interface DequeueReply {
  /** µs until work may be ready; null = only new work helps (-1 in the reply). */
  waitUs: number | null;
  /** A queue id promised to this caller, or ''. */
  promised: string;
  /** Redis's clock, ms. */
  nowMs: number;
  /** Per token the call committed first: ok or stale. */
  committed: LeaseOutcome[];
  /** Ready queues in the shard after the call, when asked; -1 when not. */
  readyCount: number;
  leases: RawLease[];
}

/** Fields of dequeue's reply before its leases, and of each lease after them. */
const DEQUEUE_HEAD = 5;
const LEASE_FIELDS = 8;

/** dequeue, one flat list: waitUs, promised, nowUs, committed, readyCount, then per lease token, queue, item, attempt, expiresAtMs, servedAtUs, intervalUs, capped. */
export function decodeDequeue(r: unknown): DequeueReply {
  const f = r as (string | number | null | undefined)[];
  const waitUs = num(f[0]);
  const leases: RawLease[] = [];
  for (let i = DEQUEUE_HEAD; i + LEASE_FIELDS <= f.length; i += LEASE_FIELDS) {
    leases.push({
      token: String(f[i]),
      queue: String(f[i + 1]),
      item: String(f[i + 2]),
      attempt: num(f[i + 3]),
      expiresAt: num(f[i + 4]),
      servedAt: num(f[i + 5]) / 1000,
      intervalMs: num(f[i + 6]) / 1000,
      capped: num(f[i + 7]) === 1,
    });
  }
  return {
    waitUs: waitUs < 0 ? null : waitUs,
    promised: String(f[1] ?? ''),
    nowMs: num(f[2]) / 1000,
    committed: [...String(f[3] ?? '')].map((c) => (c === '1' ? 'ok' : 'stale')),
    readyCount: num(f[4]),
    leases,
  };
}

/** dead: JSON records {queue, item, reason, attempts, at}. */
export function decodeDead(r: unknown): DeadItem[] {
  return (r as string[]).map((row) => {
    const d = JSON.parse(row) as Partial<DeadItem>;
    return { queue: String(d.queue), item: String(d.item), reason: String(d.reason ?? ''), attempts: num(d.attempts), at: num(d.at) };
  });
}

export interface StatsReply {
  arena: ArenaStats;
  queues: QueueStats[];
  cursor: number | null;
  /** lua/stats.lua's exact: 0, or for 'top' a bound (a queue left out has fewer queued), -1 (a shard not indexed). */
  exact: number;
}

const TOTALS = ['queued', 'leased', 'delayed', 'done', 'dead', 'enqueued', 'queues', 'held', 'maxAttempts', 'dedupeBits', 'dedupeHashes', 'schema', 'expired'] as const;
const ROW = ['name', 'rate', 'maxInFlight', 'queued', 'leased', 'delayed', 'done', 'dead', 'nextEligibleAt', 'pausedUntil', 'held', 'intervalUs'] as const;

function named<K extends string>(names: readonly K[], values: unknown[]): Record<K, string> {
  return Object.fromEntries(names.map((n, i) => [n, values[i] === undefined || values[i] === null ? '' : String(values[i] as string | number)])) as Record<K, string>;
}

/** stats: {nowMs, totals, nextCursor, rows} (see lua/stats.lua). */
export function decodeStats(r: unknown): StatsReply {
  const [now, totals, next, rows, exact] = r as [string, string[], number, string[][], number | undefined];
  const t = named(TOTALS, totals);
  const bits = num(t.dedupeBits);
  const arena: ArenaStats = {
    queued: num(t.queued),
    leased: num(t.leased),
    delayed: num(t.delayed),
    done: num(t.done),
    dead: num(t.dead),
    enqueued: num(t.enqueued),
    queues: num(t.queues),
    held: t.held === '1',
    maxAttempts: num(t.maxAttempts),
    dedupe: bits > 0 ? { bits, hashes: num(t.dedupeHashes) } : null,
    drained: num(t.queued) + num(t.leased) + num(t.delayed) === 0,
    exists: t.schema !== '',
    expired: num(t.expired),
    now: num(now),
  };
  const queues = rows.map((values): QueueStats => {
    const f = named(ROW, values);
    return {
      name: f.name,
      rate: f.rate === 'unlimited' ? 'unlimited' : num(f.rate),
      // (Six significant digits: the interval is stored to the µs.)
      pace: num(f.intervalUs) > 0 ? Number((1e6 / num(f.intervalUs)).toPrecision(6)) : 'unlimited',
      maxInFlight: num(f.maxInFlight),
      queued: num(f.queued),
      leased: num(f.leased),
      delayed: num(f.delayed),
      done: num(f.done),
      dead: num(f.dead),
      nextEligibleAt: num(f.nextEligibleAt),
      pausedUntil: num(f.pausedUntil),
      held: f.held === '1',
    };
  });
  return { arena, queues, cursor: next === 0 ? null : Number(next), exact: exact ?? 0 };
}

/** stats' 'ranks' reply: each queue's name and rank key (queued; eligible at, ms), and `exact` as decodeStats reads it. */
export function decodeRanks(r: unknown): { ranks: { name: string; key: number }[]; exact: number } {
  const [, , , rows, exact] = r as [string, string[], number, [string, string][], number | undefined];
  return { ranks: rows.map(([name, key]) => ({ name, key: Number(key) })), exact: exact ?? 0 };
}
