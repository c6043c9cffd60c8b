import { FairQueue } from '../queue/index.js';
import { estimatedFalsePositiveRate } from './bloom.js';
import { crawlKeys } from './keys.js';
import { STARTED_AT_FIELD, tallyField, type TallyName } from './tally.js';
import type { Cluster, Redis } from 'ioredis';

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
  totals: { queued: number; leased: number; delayed: number; done: number; dead: number; pages: number; errors: number; sitemaps: number; sitemapUrls: number };
  domains: DomainStats[];
  bloom: { bits: number; hashes: number; fill: number; estimatedFalsePositiveRate: number } | null;
  startedAt: number | null;
  now: number;
}

/** Everything `weir status` shows, read from Redis (nothing guessed). */
export async function crawlStats(redis: Redis | Cluster, arena: string, queue: FairQueue = new FairQueue(redis)): Promise<CrawlStats> {
  const keys = crawlKeys(arena, queue);
  const totals = await queue.stats(arena);
  const counts = await redis.hgetall(keys.stats);
  const n = (domain: string, name: TallyName): number => Number(counts[tallyField(domain, name)] ?? 0);
  const startedAt = counts[STARTED_AT_FIELD] ? Number(counts[STARTED_AT_FIELD]) : null;
  const elapsed = startedAt ? Math.max(0.001, (totals.now - startedAt) / 1000) : null;
  const domains = (await queue.allQueueStats(arena)).map((q): DomainStats => {
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
      achievedRate: elapsed ? requests / elapsed : 0,
      nextEligibleAt: q.nextEligibleAt,
      held: q.held,
      pausedUntil: q.pausedUntil,
    };
  });
  let bloom: CrawlStats['bloom'] = null;
  if (totals.dedupe) {
    const fill = (await queue.dedupeBitsSet(arena)) / totals.dedupe.bits;
    bloom = { ...totals.dedupe, fill, estimatedFalsePositiveRate: estimatedFalsePositiveRate(fill, totals.dedupe.hashes) };
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
      sitemaps: n('*', 'sitemaps'),
      sitemapUrls: n('*', 'sitemapUrls'),
    },
    domains,
    bloom,
    startedAt,
    now: totals.now,
  };
}
