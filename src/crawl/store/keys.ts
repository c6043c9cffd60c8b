/** What naming a crawler key needs of the queue: the arena's own key names (see FairQueue.key). */
export interface ArenaKeyMaker {
  key(arena: string, name: string): string;
}

/**
 * The crawler's own keys of an arena, beside the queue's: made by the queue
 * (same prefix and hash tag), so one arena is one Redis Cluster slot and
 * `weir clear` deletes them too. Written with plain commands (no scheduling
 * happens here).
 */
export function crawlKeys(arena: string, queue: ArenaKeyMaker) {
  const k = (name: string): string => queue.key(arena, name);
  return {
    /** The validated seed as JSON, written by kickoff; workers use this copy. */
    seed: k('seed'),
    /** Pages counted against maxPages (reserved before a fetch, returned when it ends in no page). */
    pages: k('pages'),
    /** Crawl counters (counters/tally.ts): field "<domain>:<name>" and "*:<name>" for totals. */
    stats: k('cstats'),
    /** Failed URLs per domain (a sorted set: domain -> count), for status's busiest-by-errors view. */
    errorDomains: k('errordomains'),
    /** Crawl-delay per origin, seconds, as read from robots.txt. */
    crawlDelays: k('crawldelay'),
    /** robots.txt of one origin (JSON, 24 h TTL). */
    robots: (origin: string) => k(`robots:${checkOrigin(origin)}`),
    /** Short lock: one worker fetches an origin's robots.txt. */
    robotsLock: (origin: string) => k(`robotslock:${checkOrigin(origin)}`),
    /** Requests per domain and the arena's pages in one 5 s bucket (counters/history.ts), expiring. */
    history: (bucket: number) => k(`hist:${Math.trunc(bucket)}`),
    /** Workers by their last flush, ms (Redis clock). */
    workers: k('workers'),
    /** Why a domain was last paused by the crawler: field domain, JSON {why, until}. */
    pauses: k('pauses'),
    /** A channel (PUBLISH) on which a worker tells the others of a Retry-After it met: JSON {queue, ms} (lease/pause-broadcast.ts). */
    pauseChannel: k('pausechan'),
    /** Why workers stopped on a fault of their own (store/faults.ts): the latest few, newest first. */
    faults: k('faults'),
    /** Sitemaps queued from robots.txt and index files, against the seed's maxSitemaps (links/follow.ts). */
    sitemapBudget: k('sitemapbudget'),
    /** Domains listed by the seed's domainFiles, and start URLs' domains given its defaultRate: field domain key, "<rate> <maxInFlight>" (links/domain-list.ts). */
    domainList: k('domainlist'),
    /** Domains the seed does not list that links led to (a set), against otherDomains.maxDomains (store/domain-claims.ts). */
    otherDomains: k('otherdomains'),
    /** Pages fetched per domain (field: domain), against maxPagesPerDomain (lease/budget.ts). */
    domainPages: k('domainpages'),
    /** URLs kept for revisits, against revisit.maxUrls (revisit/revisits.ts). */
    revisitUrls: k('revisiturls'),
    /** The address each host resolves to, for politeness per server (servers/address-book.ts): field host, "<address> <ms>". */
    addresses: k('addresses'),
    /** Each worker's local seen filter's false-positive rate, as it last flushed (field: worker id). */
    localFp: k('localfp'),
  };
}

export type CrawlKeys = ReturnType<typeof crawlKeys>;

const ORIGIN = /^https?:\/\/(\[[0-9a-f:.]+\]|[a-z0-9._-]+)(:\d{1,5})?$/;

/**
 * The only page-derived text that becomes part of a key name is an origin,
 * and only in this shape (scheme, host, port as the URL parser wrote them).
 */
export function checkOrigin(origin: string): string {
  if (!ORIGIN.test(origin)) throw new Error(`not an origin weir keys on: ${JSON.stringify(origin.slice(0, 100))}`);
  return origin;
}
