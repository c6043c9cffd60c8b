/**
 * A queued URL: named fields here, short ones in Redis (millions of these
 * sit there). encodeItem and decodeItem are the only code that knows the
 * stored form: `{"u": url, "d": depth, "r": referrer, "h": hops}`, and when
 * set `"p"` (paced), `"k": "s"` with `"n"` (a sitemap and its level), `"v"`
 * (the host that vouched for a sitemap), `"m"` (lastmod), `"w"` (the visit
 * record of a URL that is revisited: an array, VISIT_FIELDS' order).
 */

/** What weir keeps of a URL it revisits (seed revisit), carried in its queue item between visits. */
export interface VisitRecord {
  /** When it was last fetched, ms since the epoch (the worker's clock: a record, not a schedule). */
  at: number;
  /** The last final status. */
  status: number;
  etag: string | null;
  lastModified: string | null;
  /** The last 2xx payload's digest (SHA-1 of the decoded body, base64url), null when its body was not read. */
  digest: string | null;
  /** When the payload with that digest was first fetched, ms (a revisit record refers to that capture). */
  capturedAt: number | null;
  /** That capture's WARC-Payload-Digest, when it was archived (a later identical payload is archived as a revisit of it). */
  warcDigest: string | null;
  /** Seconds from this visit to the next, as decided now. */
  intervalS: number;
  /** Visits so far, this one included. */
  visits: number;
  /** Visits that found it changed. */
  changes: number;
  /** 404/410 answers in a row after it had been there. */
  gone: number;
}

const VISIT_FIELDS = ['at', 'status', 'etag', 'lastModified', 'digest', 'capturedAt', 'intervalS', 'visits', 'changes', 'gone', 'warcDigest'] as const;
export interface QueuedUrl {
  /** The normalized URL. */
  url: string;
  /**
   * Links followed from a start URL (redirect hops add none). A sitemap's is
   * the depth its pages get: 0 when the seed lists it (its pages are start
   * URLs by another name), 1 when a robots.txt does (found by crawling).
   */
  depth: number;
  /** The page it was found on, or null for a start URL. */
  referrer: string | null;
  /** Redirect hops that led here. */
  hops: number;
  /** Times a server has asked to slow down (429/503 Retry-After) for this URL. */
  paced: number;
  /** A sitemap to read, not a page: its nesting (0 when listed by robots.txt or the seed, +1 per index file above it); null for a page. */
  sitemapLevel: number | null;
  /**
   * A sitemap's voucher: the host whose robots.txt listed it (or the sitemap
   * it came from, or that redirected here). A sitemap may list pages on its
   * own host and on this one only (sitemaps.org, "cross submits").
   */
  vouchedBy: string | null;
  /** A page's lastmod, as the sitemap that listed it gave it. */
  lastmod: string | null;
  /** What its last visit found, when it is revisited; null before its first. */
  visit: VisitRecord | null;
}

/** A queued URL with the defaults of a start URL (depth 0, no referrer, no hops, a page). */
export const queuedUrl = (url: string, fields: Partial<Omit<QueuedUrl, 'url'>> = {}): QueuedUrl => ({
  url,
  depth: 0,
  referrer: null,
  hops: 0,
  paced: 0,
  sitemapLevel: null,
  vouchedBy: null,
  lastmod: null,
  visit: null,
  ...fields,
});

/** The stored form (one-letter keys; fields at their default left out). */
interface StoredItem {
  u: string;
  d: number;
  r: string | null;
  h: number;
  p?: number;
  k?: 's';
  n?: number;
  v?: string;
  m?: string;
  w?: unknown[];
}

export function encodeItem(q: QueuedUrl): string {
  const stored: StoredItem = { u: q.url, d: q.depth, r: q.referrer, h: q.hops };
  if (q.paced > 0) stored.p = q.paced;
  if (q.sitemapLevel !== null) Object.assign(stored, { k: 's', n: q.sitemapLevel });
  if (q.vouchedBy !== null) stored.v = q.vouchedBy;
  if (q.lastmod !== null) stored.m = q.lastmod;
  if (q.visit !== null) stored.w = VISIT_FIELDS.map((f) => (q.visit as VisitRecord)[f]);
  return JSON.stringify(stored);
}

const isNum = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x);
const strOrNull = (x: unknown): string | null => (typeof x === 'string' ? x : null);

/** A stored visit record, or null when it is not one (an item not written by this weir: the URL is visited as new). */
function decodeVisit(w: unknown): VisitRecord | null {
  if (!Array.isArray(w) || w.length !== VISIT_FIELDS.length) return null;
  const [at, status, etag, lastModified, digest, capturedAt, intervalS, visits, changes, gone, warcDigest] = w as unknown[];
  if (!isNum(at) || !isNum(status) || !isNum(intervalS) || !isNum(visits) || !isNum(changes) || !isNum(gone)) return null;
  return { at, status, etag: strOrNull(etag), lastModified: strOrNull(lastModified), digest: strOrNull(digest), capturedAt: isNum(capturedAt) ? capturedAt : null, intervalS, visits, changes, gone, warcDigest: strOrNull(warcDigest) };
}

/** Parses a queue item; null for anything malformed (it was not written by weir). */
export function decodeItem(text: string): QueuedUrl | null {
  try {
    const v = JSON.parse(text) as Partial<StoredItem> | null;
    if (typeof v?.u !== 'string' || typeof v.d !== 'number' || typeof v.h !== 'number') return null;
    return {
      url: v.u,
      depth: v.d,
      referrer: typeof v.r === 'string' ? v.r : null,
      hops: v.h,
      paced: typeof v.p === 'number' && v.p > 0 ? v.p : 0,
      sitemapLevel: v.k === 's' ? (typeof v.n === 'number' ? v.n : 0) : null,
      vouchedBy: typeof v.v === 'string' ? v.v : null,
      lastmod: typeof v.m === 'string' ? v.m : null,
      visit: decodeVisit(v.w),
    };
  } catch {
    return null;
  }
}
