import { FairQueue, type QueueStats, type RedisClient } from '../../queue/index.js';
import { estimatedFalsePositiveRate } from '../dedupe/index.js';
import { DomainMatcher, parseDomainKey, type DomainKey } from '../urls/index.js';
import { workersSeen } from './history.js';
import { crawlKeys, readFaults, readPauseNotes, type CrawlKeys, type PauseNote, type WorkerFault } from '../store/index.js';
import { STARTED_AT_FIELD, TALLY_NAMES, tallyField, type TallyName } from './tally.js';

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
  /** Domains (queues) the arena has. */
  domainCount: number;
  /** Which domains `domains` holds rows for. */
  shown: RowsShown;
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

/**
 * Arenas of at most this many domains are shown whole (every domain a row,
 * as the status page's table sorts and searches them: 10,000 are read in
 * about 250 ms) unless a view is asked for; bigger ones, a top-N.
 */
export const ALL_DOMAINS_MAX = 20_000;
/** Origins with a Crawl-delay read to show each row's; past this many, rows of a top-N view show none. */
const CRAWL_DELAYS_READ_MAX = 10_000;
/** The per-domain counters a row shows. */
const ROW_TALLIES: TallyName[] = ['pages', 'redirects', 'robotsFetches', 'sitemaps', 'errors', '4xx', 'robots'];

/**
 * Which domains get a row: every one (an arena of at most ALL_DOMAINS_MAX,
 * when no view is asked for), the `count` (default 50) with the biggest
 * backlogs, waiting longest for a worker while eligible, or with the most
 * failed URLs, or those named. Totals are the arena's whatever the view.
 */
export interface StatsView {
  by?: 'backlog' | 'waiting' | 'errors';
  count?: number;
  /** With `by`: the rows after the first `offset` of that order (a page further; offset + count ≤ 10,000). */
  offset?: number;
  domains?: readonly string[];
}

/** How the rows were chosen: `exact` false when the backlog index may have left out a domain as big as the last row; `offset`: rows of the order skipped. */
export interface RowsShown {
  by: 'all' | 'backlog' | 'waiting' | 'errors' | 'named';
  exact: boolean;
  offset: number;
}

/** The queues to show a row for (see StatsView), read without reading every queue unless the arena is small. */
async function rowQueues(redis: RedisClient, arena: string, queue: FairQueue, domainCount: number, view: StatsView): Promise<{ queues: QueueStats[]; shown: RowsShown }> {
  const count = Math.min(view.count ?? 50, 500);
  if (view.domains) return { queues: await queue.namedQueueStats(arena, view.domains), shown: { by: 'named', exact: true, offset: 0 } };
  if (!view.by && domainCount <= ALL_DOMAINS_MAX) return { queues: await queue.allQueueStats(arena), shown: { by: 'all', exact: true, offset: 0 } };
  const by = view.by ?? 'backlog';
  const offset = view.offset ?? 0;
  if (by === 'errors') {
    const names = await redis.zrevrange(crawlKeys(arena, queue).errorDomains, offset, offset + count - 1);
    const rows = await queue.namedQueueStats(arena, names);
    const rank = new Map(names.map((n, i) => [n, i]));
    return { queues: rows.sort((a, b) => (rank.get(a.name) ?? 0) - (rank.get(b.name) ?? 0)), shown: { by, exact: true, offset } };
  }
  const top = await queue.busiestQueues(arena, by, count, offset);
  if (top) return { queues: top.queues, shown: { by, exact: top.exact, offset } };
  // An arena whose queues were made before the backlog index: every queue read, then ranked.
  const all = await queue.allQueueStats(arena);
  all.sort(by === 'backlog' ? (a, b) => b.queued - a.queued : (a, b) => a.nextEligibleAt - b.nextEligibleAt);
  return { queues: all.slice(offset, offset + count), shown: { by, exact: true, offset } };
}

/** Each shown domain's counters: one HMGET of theirs, never the whole counter hash. */
async function rowCounts(redis: RedisClient, key: string, domains: string[]): Promise<(domain: string, name: TallyName) => number> {
  const fields = domains.flatMap((d) => ROW_TALLIES.map((n) => tallyField(d, n)));
  const values = new Map<string, number>();
  for (let i = 0; i < fields.length; i += 5000) {
    const chunk = fields.slice(i, i + 5000);
    (await redis.hmget(key, ...chunk)).forEach((v, j) => values.set(chunk[j] as string, Number(v ?? 0)));
  }
  return (domain, name) => values.get(tallyField(domain, name)) ?? 0;
}

/**
 * Rows for `queues`: each one's counters (one HMGET of theirs), why it
 * waits and its Crawl-delay. `whole`: the queues are every queue of the
 * arena, so the pause notes and Crawl-delays are read whole too (else only
 * the rows' notes, and the Crawl-delays while there are few).
 */
async function domainRows(redis: RedisClient, keys: CrawlKeys, queues: QueueStats[], at: { now: number; startedAt: number | null }, whole: boolean): Promise<DomainStats[]> {
  const names = queues.map((q) => q.name);
  const elapsed = at.startedAt ? Math.max(0.001, (at.now - at.startedAt) / 1000) : null;
  const [n, notes, delayCount] = await Promise.all([rowCounts(redis, keys.stats, names), readPauseNotes(redis, keys, whole ? undefined : names), redis.hlen(keys.crawlDelays)]);
  // (Origins are matched to the queues read: for a top-N view, a subdomain's
  // Crawl-delay may be shown on its parent's row when the subdomain's own queue is not shown.)
  const crawlDelays = whole || delayCount <= CRAWL_DELAYS_READ_MAX ? crawlDelaysByDomain(await redis.hgetall(keys.crawlDelays), names) : new Map<string, number>();
  return queues.map((q) => domainStats(q, n, { now: at.now, elapsed, note: notes.get(q.name), crawlDelay: crawlDelays.get(q.name) }));
}

/** Rows for the domains named (those the arena has), as crawlStats' are: for a search beside a snapshot's rows (its `now` and `startedAt`). */
export async function namedDomainStats(redis: RedisClient, arena: string, queue: FairQueue, names: readonly string[], at: { now: number; startedAt: number | null }): Promise<DomainStats[]> {
  return domainRows(redis, crawlKeys(arena, queue), await queue.namedQueueStats(arena, names), at, false);
}

/** Rows of the domains ranked `offset`… by backlog (a page of a big arena's table past its snapshot's rows), as crawlStats' are; none for an arena made before the backlog index. */
export async function backlogPageStats(redis: RedisClient, arena: string, queue: FairQueue, count: number, offset: number, at: { now: number; startedAt: number | null }): Promise<DomainStats[]> {
  const top = await queue.busiestQueues(arena, 'backlog', count, offset);
  return domainRows(redis, crawlKeys(arena, queue), top?.queues ?? [], at, false);
}

/**
 * Everything `weir status` shows, read from Redis (nothing guessed): the
 * arena's totals in constant time, and rows for the domains `view` picks
 * (every domain of a small arena by default).
 */
export async function crawlStats(redis: RedisClient, arena: string, queue: FairQueue = new FairQueue(redis), view: StatsView = {}): Promise<CrawlStats> {
  const keys = crawlKeys(arena, queue);
  const totals = await queue.stats(arena);
  const totalFields = [...TALLY_NAMES.map((name) => tallyField('*', name)), STARTED_AT_FIELD];
  const read = await redis.hmget(keys.stats, ...totalFields);
  const totalOf = new Map(totalFields.map((f, i) => [f, read[i]]));
  const t = (name: TallyName): number => Number(totalOf.get(tallyField('*', name)) ?? 0);
  const started = totalOf.get(STARTED_AT_FIELD);
  const startedAt = started ? Number(started) : null;
  const { queues, shown } = await rowQueues(redis, arena, queue, totals.queues, view);
  const [domains, workers, faults] = await Promise.all([
    domainRows(redis, keys, queues, { now: totals.now, startedAt }, shown.by === 'all'),
    workersSeen(redis, keys, totals.now),
    readFaults(redis, keys),
  ]);
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
      pages: t('pages'),
      errors: t('errors') + t('4xx'),
      robotsBlocked: t('robots'),
      sitemaps: t('sitemaps'),
      sitemapUrls: t('sitemapUrls'),
      newDomains: t('newDomains'),
      domainCapDrops: t('domainCapDrops'),
      quotaSkips: t('quotaSkips'),
      addressMoves: t('addressMoves'),
      revisits: revisitTotals(t),
    },
    domainCount: totals.queues,
    shown,
    domains,
    bloom: await bloomStats(redis, arena, queue, totals.dedupe),
    startedAt,
    workers,
    faults,
    now: totals.now,
  };
}

/** The shared filter's fill and false-positive rates, and the workers' local filters'. */
async function bloomStats(redis: RedisClient, arena: string, queue: FairQueue, dedupe: { bits: number; hashes: number } | null): Promise<CrawlStats['bloom']> {
  if (!dedupe) return null;
  // Per shard: each holds its own domains' part of the bitmap, and a shard
  // with more URLs fills sooner; the rate shown is the fullest part's.
  const parts = await queue.dedupeFill(arena);
  const fill = parts.reduce((s, p) => s + p.set, 0) / dedupe.bits;
  const fullest = Math.max(...parts.map((p) => (p.bits > 0 ? p.set / p.bits : 0)));
  const shared = estimatedFalsePositiveRate(fullest, dedupe.hashes);
  const local = Math.max(0, ...Object.values(await redis.hgetall(crawlKeys(arena, queue).localFp)).map(Number).filter(Number.isFinite));
  return { ...dedupe, fill, estimatedFalsePositiveRate: shared, localFalsePositiveRate: local, combinedFalsePositiveRate: 1 - (1 - shared) * (1 - local) };
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
