import type { Cluster, Redis } from 'ioredis';
import { addFields, type FieldAdds } from './add-fields.js';
import type { HistoryWriter } from './history.js';
import type { CrawlMetrics } from './metrics.js';

/**
 * The crawl's counters: one list of names, shared by the worker that counts,
 * `status` that reads them back from Redis and the metrics. Kept per domain
 * and for the arena ("*") in one hash, field "<domain>:<name>".
 */
export const TALLY_NAMES = [
  /** URLs fetched to a final response (not robots.txt, not redirect hops). */
  'pages',
  /** Final responses by status class. */
  '2xx',
  '3xx',
  '4xx',
  '5xx',
  /** Body bytes read, after decompression. */
  'bytes',
  /** URLs that ended in an error: dead-lettered (including robots.txt unavailable), or given up on. */
  'errors',
  /** URLs skipped because robots.txt disallows them. */
  'robots',
  /** robots.txt fetches (each takes a rate slot). */
  'robotsFetches',
  /** URLs handed back to wait for another lane's robots.txt fetch. */
  'robotsWaits',
  /** Redirect hops recorded (each target queued as a new URL). */
  'redirects',
  /** Links (and redirect targets) enqueued: new and in scope. */
  'enqueued',
  /** In-scope links dropped as already seen (by this worker's local filter or the shared one). */
  'dedupeHits',
  /** Of those, the ones this worker had already offered itself: not sent to Redis (local-seen.ts). */
  'localHits',
  /** Links that could not be made into a crawlable URL. */
  'malformed',
  /** Retries after 5xx or network errors. */
  'retries',
  /** 429/503 Retry-After pauses. */
  'paced',
  /** Requests written over 5 ms after their slot (the domain's next slot counts from the write: no gap is short for it). */
  'lateSends',
  /** Slots whose send window had passed: the lease went back unused. */
  'lateSlots',
  /** Leases handed back unused (shutdown, missed slots, robots waits). */
  'released',
  /** Lease calls that found the lease expired (its URL goes to another worker). */
  'stale',
  /** Sitemaps fetched (robots.txt-listed, seed-listed, or listed by an index). */
  'sitemaps',
  /** In-scope page URLs found in sitemaps (new or already seen). */
  'sitemapUrls',
  /** Sitemap entries ignored: past the protocol's 50,000, too long, out of every domain, or nested too deep. */
  'sitemapIgnored',
  /** URLs whose handling failed unexpectedly (a bug, Redis trouble): handed back at once, logged. */
  'internalErrors',
] as const;

export type TallyName = (typeof TALLY_NAMES)[number];

/** The hash field of a counter; domain '*' is the arena's total. */
export const tallyField = (domain: string, name: TallyName): string => `${domain}:${name}`;

/** A list of counts to add, as outcomes carry them. */
export type Tallies = [TallyName, number][];

export class Tally {
  private pending = new Map<string, number>();
  /** This process's totals, for its summary. */
  readonly local = Object.fromEntries(TALLY_NAMES.map((n) => [n, 0])) as Record<TallyName, number>;

  constructor(
    private readonly metrics?: CrawlMetrics,
    /** Recent requests per domain for the status page, written with each flush. */
    private readonly history?: HistoryWriter,
  ) {}

  add(domain: string, name: TallyName, n = 1): void {
    if (n === 0) return;
    for (const field of [tallyField(domain, name), tallyField('*', name)]) this.pending.set(field, (this.pending.get(field) ?? 0) + n);
    this.local[name] += n;
    this.metrics?.count(name, n);
    this.history?.count(domain, name, n);
  }

  addAll(domain: string, tallies: Tallies): void {
    for (const [name, n] of tallies) this.add(domain, name, n);
  }

  /**
   * Writes what was counted since the last flush, the history buckets and
   * this worker's heartbeat: one pipeline, the counts in one script call.
   */
  async flush(redis: Redis | Cluster, key: string): Promise<void> {
    if (this.pending.size === 0 && !this.history) return;
    const adds: FieldAdds = new Map([[key, this.pending]]);
    this.pending = new Map();
    const p = redis.pipeline();
    const expiries = this.history?.takeCounts(adds) ?? [];
    addFields(p, adds);
    this.history?.heartbeat(p, expiries);
    await p.exec();
  }
}

/** Beside the counters: when the crawl started, by Redis's clock (ms), written once by kickoff. */
export const STARTED_AT_FIELD = '*:startedAt';
