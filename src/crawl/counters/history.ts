import { hostname } from 'node:os';
import type { ChainableCommander } from 'ioredis';
import { addTo, type FieldAdds } from './add-fields.js';
import type { CrawlKeys } from '../store/index.js';
import type { TallyName } from './names.js';
import type { RedisClient } from '../../queue/index.js';

/**
 * Recent history for the status page, written by every worker in the
 * pipeline it already sends each second (Tally.flush): requests per domain
 * and the arena's pages, counted in 5-second buckets by Redis's clock, one
 * hash per bucket ("hist:<bucket>", field = domain, "*" = arena pages), each
 * expiring after the retention. At most 60 bucket keys live at once, each
 * with one field per domain that made a request in those 5 s (about 60 B a
 * field: a 1,000-domain crawl with every domain busy keeps ≈ 3.6 MB).
 * Beside it, a sorted set of workers by their last flush.
 */
export const HISTORY = {
  bucketMs: 5_000,
  buckets: 60,
  /** A worker counts as seen if it flushed within this. */
  workerSeenMs: 15_000,
  /** Workers silent this long are pruned from the set. */
  workerForgetMs: 3_600_000,
} as const;

/** Tallies that are requests to a site (each took a rate slot). */
const REQUESTS: ReadonlySet<TallyName> = new Set(['pages', 'redirects', 'robotsFetches', 'sitemaps']);
/** The arena's field in a bucket: its pages. */
export const ARENA_FIELD = '*';

/** A domain's field for the pace in force (requests/s, adaptivePace) in a bucket: its last report's. */
const paceField = (domain: string): string => `~${domain}`;

export class HistoryWriter {
  private pending = new Map<number, Map<string, number>>();
  /** The pace in force each domain's last report in each bucket came back with (set, not added: every worker reports the same queue's). */
  private paces = new Map<number, Map<string, number>>();

  constructor(
    private readonly keys: Pick<CrawlKeys, 'history' | 'workers' | 'localFp'>,
    /** Redis's clock, ms. */
    private readonly now: () => number,
    /** The worker's local seen filter's false-positive rate now (reported beside the shared filter's). */
    private readonly localFalsePositiveRate: () => number = () => 0,
    readonly workerId = `${hostname()}/${process.pid}/${Math.random().toString(36).slice(2, 8)}`,
  ) {}

  count(domain: string, name: TallyName, n: number): void {
    if (!REQUESTS.has(name)) return;
    const bucket = Math.floor(this.now() / HISTORY.bucketMs);
    let fields = this.pending.get(bucket);
    if (!fields) this.pending.set(bucket, (fields = new Map<string, number>()));
    fields.set(domain, (fields.get(domain) ?? 0) + n);
    if (name === 'pages') fields.set(ARENA_FIELD, (fields.get(ARENA_FIELD) ?? 0) + n);
  }

  /** The pace in force for `domain` now, requests/s (0: unlimited), as adaptivePace learned it. */
  pace(domain: string, rate: number): void {
    const bucket = Math.floor(this.now() / HISTORY.bucketMs);
    let fields = this.paces.get(bucket);
    if (!fields) this.paces.set(bucket, (fields = new Map<string, number>()));
    fields.set(domain, rate);
  }

  /** Moves this flush's history counts into `adds`; returns each bucket's key and expiry, for `heartbeat` once the counts are written. */
  takeCounts(adds: FieldAdds): [string, number][] {
    const ttlMs = HISTORY.bucketMs * (HISTORY.buckets + 1);
    const expiries = new Map<string, number>();
    for (const [bucket, fields] of this.pending) {
      const key = this.keys.history(bucket);
      for (const [field, n] of fields) addTo(adds, key, field, n);
      expiries.set(key, (bucket + 1) * HISTORY.bucketMs + ttlMs);
    }
    for (const bucket of this.paces.keys()) expiries.set(this.keys.history(bucket), (bucket + 1) * HISTORY.bucketMs + ttlMs);
    this.pending = new Map();
    return [...expiries];
  }

  /**
   * Adds the paces, the buckets' expiries (after their counts and paces: an
   * expiry set on a bucket not written yet is lost) and the worker's
   * heartbeat to `p`.
   */
  heartbeat(p: ChainableCommander, expiries: [string, number][]): void {
    const now = this.now();
    for (const [bucket, fields] of this.paces) p.hset(this.keys.history(bucket), ...[...fields].flatMap(([domain, rate]) => [paceField(domain), String(rate)]));
    this.paces = new Map();
    for (const [key, at] of expiries) p.pexpireat(key, at);
    p.zadd(this.keys.workers, Math.round(now), this.workerId);
    // Kept after the worker ends: URLs its filter dropped stay dropped, so status takes the largest.
    p.hset(this.keys.localFp, this.workerId, this.localFalsePositiveRate().toExponential(3));
    p.zremrangebyscore(this.keys.workers, '-inf', Math.round(now - HISTORY.workerForgetMs));
  }
}

export interface History {
  bucketMs: number;
  /** Start of the first bucket, ms (Redis clock). */
  from: number;
  /** Requests per second per asked domain, one value per complete bucket. */
  domains: Record<string, number[]>;
  /** The pace in force (requests/s, 0: unlimited) per asked domain whose adaptivePace reported in the window, per bucket (null: no report in it). */
  paces: Record<string, (number | null)[]>;
  /** The arena's pages per second, one value per complete bucket. */
  pages: number[];
}

/** The last complete buckets (up to the retention) for `domains` and the arena. */
export async function readHistory(redis: RedisClient, keys: Pick<CrawlKeys, 'history'>, domains: string[], now: number): Promise<History> {
  const last = Math.floor(now / HISTORY.bucketMs) - 1;
  const first = last - HISTORY.buckets + 1;
  const fields = [ARENA_FIELD, ...domains, ...domains.map(paceField)];
  const p = redis.pipeline();
  for (let b = first; b <= last; b++) p.hmget(keys.history(b), ...fields);
  const replies = (await p.exec()) ?? [];
  const perSecond = (v: string | null | undefined): number => Number(v ?? 0) / (HISTORY.bucketMs / 1000);
  const rows = replies.map(([err, v]) => (err ? [] : (v as (string | null)[])));
  return {
    bucketMs: HISTORY.bucketMs,
    from: first * HISTORY.bucketMs,
    pages: rows.map((r) => perSecond(r[0])),
    domains: Object.fromEntries(domains.map((d, i) => [d, rows.map((r) => perSecond(r[i + 1]))])),
    paces: Object.fromEntries(
      domains
        .map((d, i): [string, (number | null)[]] => [d, rows.map((r) => (r[1 + domains.length + i] == null ? null : Number(r[1 + domains.length + i])))])
        .filter(([, v]) => v.some((x) => x !== null)),
    ),
  };
}

/** Workers whose last flush is within HISTORY.workerSeenMs of `now`. */
export async function workersSeen(redis: RedisClient, keys: Pick<CrawlKeys, 'workers'>, now: number): Promise<number> {
  return redis.zcount(keys.workers, Math.round(now - HISTORY.workerSeenMs), '+inf');
}
