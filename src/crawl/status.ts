import type { Cluster, Redis } from 'ioredis';
import { FairQueue, arenaKeys } from '../queue/index.js';
import { estimatedFalsePositiveRate } from './bloom.js';
import { crawlKeys } from './keys.js';

export interface DomainStatus {
  domain: string;
  queued: number;
  leased: number;
  delayed: number;
  /** URLs finished (committed): pages, robots skips, redirects, 4xx. */
  done: number;
  /** Pages fetched to a final response. */
  pages: number;
  /** URLs that ended in an error (4xx/5xx pages, dead-lettered). */
  failed: number;
  dead: number;
  robotsBlocked: number;
  rateLimit: number | 'unlimited';
  /** Requests per second achieved since the crawl started (pages, redirects and robots.txt fetches). */
  achievedRate: number;
  nextEligibleAt: number;
  held: boolean;
  pausedUntil: number;
}

export interface CrawlStatus {
  arena: string;
  exists: boolean;
  drained: boolean;
  totals: { queued: number; leased: number; delayed: number; done: number; dead: number; pages: number; errors: number };
  domains: DomainStatus[];
  bloom: { bits: number; hashes: number; fill: number; estimatedFalsePositiveRate: number } | null;
  startedAt: number | null;
  now: number;
}

/** Everything `weir status` shows, read from Redis (nothing guessed). */
export async function crawlStatus(redis: Redis | Cluster, arena: string, queue = new FairQueue(redis)): Promise<CrawlStatus> {
  const keys = crawlKeys(arena, queue.prefix);
  const totals = await queue.stats(arena);
  const stats = await redis.hgetall(keys.stats);
  const n = (f: string): number => Number(stats[f] ?? 0);
  const startedAt = stats['*:startedAt'] ? Number(stats['*:startedAt']) : null;
  const figures = await queue.allQueueStats(arena);
  const elapsed = startedAt ? Math.max(0.001, (totals.now - startedAt) / 1000) : null;
  const domains = figures.map((q): DomainStatus => {
    const requests = n(`${q.name}:pages`) + n(`${q.name}:redirects`) + n(`${q.name}:robotsFetches`);
    return {
      domain: q.name,
      queued: q.queued,
      leased: q.leased,
      delayed: q.delayed,
      done: q.done,
      pages: n(`${q.name}:pages`),
      failed: n(`${q.name}:errors`) + n(`${q.name}:4xx`),
      dead: q.dead,
      robotsBlocked: n(`${q.name}:robots`),
      rateLimit: q.rate,
      achievedRate: elapsed ? requests / elapsed : 0,
      nextEligibleAt: q.nextEligibleAt,
      held: q.held,
      pausedUntil: q.pausedUntil,
    };
  });
  let bloom: CrawlStatus['bloom'] = null;
  if (totals.dedupe) {
    const dedupeKey = arenaKeys(queue.prefix, arena)[12] as string;
    const set = await redis.bitcount(dedupeKey);
    const fill = set / totals.dedupe.bits;
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
      pages: n('*:pages'),
      errors: n('*:errors') + n('*:4xx'),
    },
    domains,
    bloom,
    startedAt,
    now: totals.now,
  };
}

/** A plain-text table, columns padded. */
export function table(header: string[], rows: (string | number)[][]): string {
  const cells = [header, ...rows.map((r) => r.map(String))];
  const widths = header.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  return cells.map((r) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ')).join('\n');
}

export function formatStatus(s: CrawlStatus): string {
  const rows = s.domains.map((d) => [
    d.domain,
    d.queued,
    d.leased,
    d.done,
    d.pages,
    d.failed,
    d.dead,
    d.robotsBlocked,
    d.rateLimit === 'unlimited' ? 'unlimited' : `${d.rateLimit}/s`,
    `${d.achievedRate.toFixed(2)}/s`,
    d.held ? 'held' : d.nextEligibleAt > s.now ? `in ${((d.nextEligibleAt - s.now) / 1000).toFixed(2)}s` : d.queued > 0 ? 'now' : '-',
  ]);
  const lines = [
    `arena ${s.arena}: ${s.drained ? 'drained' : 'running'} — queued ${s.totals.queued}, leased ${s.totals.leased}, waiting to retry ${s.totals.delayed}, done ${s.totals.done}, dead ${s.totals.dead}, pages ${s.totals.pages}`,
    table(['domain', 'queued', 'leased', 'done', 'pages', 'failed', 'dead', 'robots', 'limit', 'achieved', 'next'], rows),
  ];
  if (s.bloom) {
    lines.push(
      `bloom: ${s.bloom.bits} bits, ${s.bloom.hashes} hashes, ${(s.bloom.fill * 100).toFixed(3)}% full, estimated false-positive rate ${s.bloom.estimatedFalsePositiveRate.toExponential(2)}`,
    );
  }
  return lines.join('\n');
}
