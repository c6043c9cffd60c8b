import { backlogPageStats, readHistory, type History, crawlStats, namedDomainStats, type CrawlStats, type DomainStats } from '../crawl/counters/index.js';
import { crawlKeys, decodeItem } from '../crawl/store/index.js';
import { LIMITS, type FairQueue, type RedisClient } from '../queue/index.js';
import { selectRows, type ViewQuery } from './view.js';

/** The first page of the dead letter, as the page shows it. */
export interface DeadRow {
  domain: string;
  url: string;
  reason: string;
  attempts: number;
  at: number;
}

/** What the page draws at each refresh. */
export interface StatusView {
  arena: string;
  redis: string;
  now: number;
  exists: boolean;
  drained: boolean;
  startedAt: number | null;
  workers: number;
  faults: CrawlStats['faults'];
  totals: CrawlStats['totals'] & { domains: number };
  /** Which domains the table holds, when not every one (a big arena: its biggest backlogs). */
  shownNote: string | null;
  bloom: CrawlStats['bloom'];
  query: ViewQuery;
  matched: number;
  rows: DomainStats[];
  history: History;
  dead: DeadRow[];
}

export const DEAD_PAGE = 20;
/** The table's rows: every domain of a small arena, else the 200 with the biggest backlogs (crawl/counters/stats.ts). */
const PAGE_ROWS = { count: 200 } as const;
/** A snapshot up to this many maxAges old is served while the next is read. */
const STALE_FACTOR = 3;

/**
 * Reads the arena for the page: one snapshot of `crawlStats` at most every
 * `maxAgeMs`, shared by every request in between (so many open pages cost
 * Redis what one does), and per request only the history of the rows shown.
 */
export class StatusSource {
  private last: { at: number; stats: CrawlStats; dead: DeadRow[] } | null = null;
  private pending: Promise<{ stats: CrawlStats; dead: DeadRow[] }> | null = null;

  constructor(
    private readonly redis: RedisClient,
    private readonly queue: FairQueue,
    readonly arena: string,
    /** The Redis URL with any password masked. */
    readonly redisShown: string,
    private readonly maxAgeMs = 1000,
  ) {}

  /** The same object `weir status --json` prints, at most maxAgeMs old. */
  async stats(): Promise<CrawlStats> {
    return (await this.snapshot()).stats;
  }

  async view(query: ViewQuery): Promise<StatusView> {
    const { stats, dead } = await this.snapshot();
    // A big arena's snapshot holds its biggest backlogs: a search also finds any domain by its exact name.
    let pool = stats.domains;
    if (stats.shown.by !== 'all' && query.q !== '' && !pool.some((d) => d.domain === query.q)) {
      pool = [...pool, ...(await namedDomainStats(this.redis, this.arena, this.queue, [query.q], stats))];
    }
    const { matched, rows } = this.pagesBeyond(stats, query) ? await this.backlogPage(stats, pool, query) : selectRows(pool, query);
    const history = await readHistory(this.redis, crawlKeys(this.arena, this.queue), rows.map((r) => r.domain), stats.now);
    return {
      arena: this.arena,
      redis: this.redisShown,
      now: stats.now,
      exists: stats.exists,
      drained: stats.drained,
      startedAt: stats.startedAt,
      workers: stats.workers,
      faults: stats.faults,
      totals: { ...stats.totals, domains: stats.domainCount },
      shownNote:
        stats.shown.by === 'all'
          ? null
          : `the ${stats.domains.length} of ${stats.domainCount.toLocaleString('en-US')} domains with the most URLs queued; sorted by URLs queued (most first), pages go on to the ${LIMITS.maxStatsRank.toLocaleString('en-US')}th; a search also finds any domain by its exact name`,
      bloom: stats.bloom,
      query,
      matched,
      rows,
      history,
      dead,
    };
  }

  /**
   * Whether the table pages on past the snapshot's rows: a big arena whose
   * snapshot is its biggest backlogs (all it had room for), sorted by URLs
   * queued, most first, with no search.
   */
  private pagesBeyond(stats: CrawlStats, query: ViewQuery): boolean {
    return stats.shown.by === 'backlog' && stats.domains.length >= PAGE_ROWS.count && query.q === '' && query.sort === 'queued' && query.dir === 'desc';
  }

  /**
   * A page of the biggest backlogs: from the snapshot while it holds the
   * page, else read now by rank (FairQueue.busiestQueues' offset, ties by
   * name as the snapshot is sorted), to rank LIMITS.maxStatsRank. Matched:
   * as far as the order goes (a short page is its end).
   */
  private async backlogPage(stats: CrawlStats, pool: DomainStats[], query: ViewQuery): Promise<{ matched: number; rows: DomainStats[] }> {
    const offset = query.page * query.size;
    const count = Math.min(query.size, LIMITS.maxStatsRank - offset);
    let rows: DomainStats[];
    if (offset + query.size <= pool.length) rows = selectRows(pool, query).rows;
    else rows = count > 0 ? await backlogPageStats(this.redis, this.arena, this.queue, count, offset, stats) : [];
    const matched = rows.length < count || count <= 0 ? offset + rows.length : Math.min(stats.domainCount, LIMITS.maxStatsRank);
    return { matched, rows };
  }

  /** Starts the first read now, so the first page finds it done. */
  warm(): void {
    this.refresh().catch(() => undefined);
  }

  /**
   * The latest snapshot. Past maxAgeMs a new read starts and, while the old
   * one is younger than STALE_FACTOR × maxAgeMs, requests don't wait for it
   * (a big arena takes a while to read); older, they do (and see its error).
   */
  private async snapshot(): Promise<{ stats: CrawlStats; dead: DeadRow[] }> {
    const last = this.last;
    if (!last) return this.refresh();
    const age = performance.now() - last.at;
    if (age < this.maxAgeMs) return last;
    const next = this.refresh();
    if (age < STALE_FACTOR * this.maxAgeMs) {
      next.catch(() => undefined);
      return last;
    }
    return next;
  }

  private refresh(): Promise<{ stats: CrawlStats; dead: DeadRow[] }> {
    this.pending ??= this.read().finally(() => (this.pending = null));
    return this.pending;
  }

  private async read(): Promise<{ stats: CrawlStats; dead: DeadRow[] }> {
    const [stats, items] = await Promise.all([crawlStats(this.redis, this.arena, this.queue, PAGE_ROWS), this.queue.dead(this.arena, { count: DEAD_PAGE })]);
    const dead = items.map((d) => ({ domain: d.queue, url: decodeItem(d.item)?.url ?? d.item.slice(0, 300), reason: d.reason, attempts: d.attempts, at: d.at }));
    this.last = { at: performance.now(), stats, dead };
    return this.last;
  }
}
