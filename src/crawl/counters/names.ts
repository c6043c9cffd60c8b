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
  /** Of those, the ones this worker had already offered itself: not sent to Redis (dedupe/local-seen.ts). */
  'localHits',
  /** Domains the seed does not list that this domain's pages led to first (otherDomains): each is counted once, under the page that found it. */
  'newDomains',
  /** Links (and redirect targets) dropped because they lead to a new domain past otherDomains.maxDomains. */
  'domainCapDrops',
  /** URLs not fetched because their domain had its maxPagesPerDomain. */
  'quotaSkips',
  /** Visits of URLs visited before (seed revisit), and what they found: changed, unchanged (same payload), not modified (304). */
  'revisits',
  'revisitsChanged',
  'revisitsUnchanged',
  'revisitsNotModified',
  /** URLs dropped from revisits: gone (404/410) too many visits in a row. */
  'revisitsGone',
  /** Pages visited once because revisit.maxUrls URLs were kept already. */
  'revisitsCapDrops',
  /** URLs queued again for another server because their host's address changed (perServer). */
  'addressMoves',
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
  /** Sitemap entries ignored: past the protocol's 50,000, too long, out of every domain, on a host the sitemap may not speak for, past maxDepth or maxSitemaps, or nested too deep. */
  'sitemapIgnored',
  /** URLs whose handling failed unexpectedly (a bug, Redis trouble): handed back at once, logged. */
  'internalErrors',
  /** Exchanges that could not be archived (WARC): the worker stopped on the first. */
  'archiveFailures',
] as const;

export type TallyName = (typeof TALLY_NAMES)[number];

/** The hash field of a counter; domain '*' is the arena's total. */
export const tallyField = (domain: string, name: TallyName): string => `${domain}:${name}`;

/** A list of counts to add, as outcomes carry them. */
export type Tallies = [TallyName, number][];
