import { FairQueue, type QueueStats, type RedisClient } from '../../queue/index.js';
import { estimatedFalsePositiveRate } from '../dedupe/index.js';
import { DomainMatcher, parseDomainKey, type DomainKey } from '../urls/index.js';
import { workersSeen } from './history.js';
import { crawlKeys, readFaults, readPauseNotes, type PauseNote, type WorkerFault } from '../store/index.js';
import { STARTED_AT_FIELD, tallyField, type TallyName } from './tally.js';

/**
 * Why a domain is not being fetched this moment: an operator's hold, a
 * server's Retry-After, its robots.txt being fetched, its Crawl-delay or
 * rate (next slot later), its in-flight cap, retries backing off, or
 * 'worker' (ready: waiting for a free lane), 'fetching' (nothing else
 * queued), 'nothing' (empty).
 */
export type WaitReason = 'hold' | 'retry-after' | 'robots' | 'crawl-delay' | 'rate' | 'in-flight cap' | 'retry' | 'worker' | 'fetching' | 'nothing';

export interface DomainStats {
  domain: string;
  queued: number;
  leased: number;
  delayed: number;
  /** URLs finished (committed): pages, robots skips, redirects, 4xx. */
  done: number;
  /** Pages fetched to a final response. */
  pages: number;
  /** URLs that ended in an error: 4xx/5xx pages, dead-lettered (robots.txt unavailable included). */
  failed: number;
  dead: number;
  robotsBlocked: number;
  rateLimit: number | 'unlimited';
  /** The rate in force now: rateLimit, or slower while adaptivePace has learned a slower pace for the site. */
  pace: number | 'unlimited';
  /** Leases of this domain out at once at most (0: no cap). */
  maxInFlight: number;
  /** The largest Crawl-delay (s) its origins' robots.txt asked for, or null. */
  crawlDelay: number | null;
  waitingFor: WaitReason;
  /** Requests per second achieved since the crawl started (pages, redirects, robots.txt and sitemap fetches). */
  achievedRate: number;
  nextEligibleAt: number;
  held: boolean;
  pausedUntil: number;
}

export interface CrawlStats {
  arena: string;
  exists: boolean;
  drained: boolean;
  totals: { queued: number; leased: number; delayed: number; done: number; dead: number; pages: number; errors: number; robotsBlocked: number; sitemaps: number; sitemapUrls: number;
    /** Domains the seed does not list that the crawl created (otherDomains), links dropped past its maxDomains, URLs skipped past maxPagesPerDomain. */
    newDomains: number; domainCapDrops: number; quotaSkips: number; addressMoves: number;
    /** Revisits done, and what they found; URLs dropped from revisits (gone), pages visited once past revisit.maxUrls. */
    revisits: { done: number; changed: number; unchanged: number; notModified: number; gone: number; capDrops: number } };
  domains: DomainStats[];
  bloom: {
    bits: number;
    hashes: number;
    fill: number;
    /** The shared filter's, from its fill. */
    estimatedFalsePositiveRate: number;
    /** The largest any worker's local seen filter reported (0 before any did). */
    localFalsePositiveRate: number;
    /** A URL is dropped by mistake when either filter errs: 1 − (1 − shared)(1 − local). */
    combinedFalsePositiveRate: number;
  } | null;
  startedAt: number | null;
  /** Workers that wrote their counters within the last 15 s. */
  workers: number;
  /** Why workers stopped on faults of their own (a WARC file that could not be written), newest first. */
  faults: WorkerFault[];
  now: number;
}

/** The arena's revisit counters (seed revisit). */
function revisitTotals(n: (name: TallyName) => number): CrawlStats['totals']['revisits'] {
  return {
    done: n('revisits'),
    changed: n('revisitsChanged'),
    unchanged: n('revisitsUnchanged'),
    notModified: n('revisitsNotModified'),
    gone: n('revisitsGone'),
    capDrops: n('revisitsCapDrops'),
  };
}

/** Everything `weir status` shows, read from Redis (nothing guessed). */
export async function crawlStats(redis: RedisClient, arena: string, queue: FairQueue = new FairQueue(redis)): Promise<CrawlStats> {
  const keys = crawlKeys(arena, queue);
  const totals = await queue.stats(arena);
  const counts = await redis.hgetall(keys.stats);
  const n = (domain: string, name: TallyName): number => Number(counts[tallyField(domain, name)] ?? 0);
  const startedAt = counts[STARTED_AT_FIELD] ? Number(counts[STARTED_AT_FIELD]) : null;
  const elapsed = startedAt ? Math.max(0.001, (totals.now - startedAt) / 1000) : null;
  const [queues, notes, delays, workers, faults] = await Promise.all([
    queue.allQueueStats(arena),
    readPauseNotes(redis, keys),
    redis.hgetall(keys.crawlDelays),
    workersSeen(redis, keys, totals.now),
    readFaults(redis, keys),
  ]);
  const crawlDelays = crawlDelaysByDomain(delays, queues.map((q) => q.name));
  const domains = queues.map((q) => domainStats(q, n, { now: totals.now, elapsed, note: notes.get(q.name), crawlDelay: crawlDelays.get(q.name) }));
  let bloom: CrawlStats['bloom'] = null;
  if (totals.dedupe) {
    // Per shard: each holds its own domains' part of the bitmap, and a shard
    // with more URLs fills sooner; the rate shown is the fullest part's.
    const parts = await queue.dedupeFill(arena);
    const fill = parts.reduce((s, p) => s + p.set, 0) / totals.dedupe.bits;
    const fullest = Math.max(...parts.map((p) => (p.bits > 0 ? p.set / p.bits : 0)));
    const shared = estimatedFalsePositiveRate(fullest, totals.dedupe.hashes);
    const local = Math.max(0, ...Object.values(await redis.hgetall(keys.localFp)).map(Number).filter(Number.isFinite));
    bloom = { ...totals.dedupe, fill, estimatedFalsePositiveRate: shared, localFalsePositiveRate: local, combinedFalsePositiveRate: 1 - (1 - shared) * (1 - local) };
  }
  return {
    arena,
    exists: totals.exists,
    drained: totals.drained,
    totals: {
      queued: totals.queued,
      leased: totals.leased,
      delayed: totals.delayed,
      done: totals.done,
      dead: totals.dead,
      pages: n('*', 'pages'),
      errors: n('*', 'errors') + n('*', '4xx'),
      robotsBlocked: n('*', 'robots'),
      sitemaps: n('*', 'sitemaps'),
      sitemapUrls: n('*', 'sitemapUrls'),
      newDomains: n('*', 'newDomains'),
      domainCapDrops: n('*', 'domainCapDrops'),
      quotaSkips: n('*', 'quotaSkips'),
      addressMoves: n('*', 'addressMoves'),
      revisits: revisitTotals((name) => n('*', name)),
    },
    domains,
    bloom,
    startedAt,
    workers,
    faults,
    now: totals.now,
  };
}

function domainStats(
  q: QueueStats,
  n: (domain: string, name: TallyName) => number,
  at: { now: number; elapsed: number | null; note: PauseNote | undefined; crawlDelay: number | undefined },
): DomainStats {
  const requests = n(q.name, 'pages') + n(q.name, 'redirects') + n(q.name, 'robotsFetches') + n(q.name, 'sitemaps');
  return {
    domain: q.name,
    queued: q.queued,
    leased: q.leased,
    delayed: q.delayed,
    done: q.done,
    pages: n(q.name, 'pages'),
    failed: n(q.name, 'errors') + n(q.name, '4xx'),
    dead: q.dead,
    robotsBlocked: n(q.name, 'robots'),
    rateLimit: q.rate,
    pace: q.pace,
    maxInFlight: q.maxInFlight,
    crawlDelay: at.crawlDelay ?? null,
    waitingFor: waitReason(q, at.now, at.note, at.crawlDelay),
    achievedRate: at.elapsed ? requests / at.elapsed : 0,
    nextEligibleAt: q.nextEligibleAt,
    held: q.held,
    pausedUntil: q.pausedUntil,
  };
}

/** See WaitReason; the first that applies, in that order. */
export function waitReason(q: QueueStats, now: number, note: PauseNote | undefined, crawlDelay: number | undefined): WaitReason {
  if (q.held) return 'hold';
  const paced = (): WaitReason => (crawlDelay !== undefined && q.rate !== 'unlimited' && q.rate <= 1 / crawlDelay + 1e-9 ? 'crawl-delay' : 'rate');
    // A note explains the pause only while the pause still ends when the note says (a later pause or a repause moved it).
  if (q.pausedUntil > now) return note && Math.abs(note.until - q.pausedUntil) <= 1 ? note.why : paced();
  if (q.queued === 0) return q.delayed > 0 ? 'retry' : q.leased > 0 ? 'fetching' : 'nothing';
  if (q.maxInFlight > 0 && q.leased >= q.maxInFlight) return 'in-flight cap';
  if (q.nextEligibleAt > now) return paced();
  return 'worker';
}

/**
 * The largest Crawl-delay per queue, from the per-origin hash: each origin
 * belongs to the queue its URLs would (the queue names are domain keys).
 */
function crawlDelaysByDomain(byOrigin: Record<string, string>, queues: string[]): Map<string, number> {
  const matcher = new DomainMatcher(queues.map(parseDomainKey).filter((k): k is DomainKey => typeof k !== 'string'));
  const out = new Map<string, number>();
  for (const [origin, text] of Object.entries(byOrigin)) {
    const delay = Number(text);
    let domain: string | undefined;
    try {
      domain = matcher.match(new URL(origin))?.key;
    } catch {
      continue;
    }
    if (domain !== undefined && Number.isFinite(delay)) out.set(domain, Math.max(out.get(domain) ?? 0, delay));
  }
  return out;
}
