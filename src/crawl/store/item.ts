/**
 * A queued URL: named fields here, short ones in Redis (millions of these
 * sit there). encodeItem and decodeItem are the only code that knows the
 * stored form: `{"u": url, "d": depth, "r": referrer, "h": hops}`, and when
 * set `"p"` (paced), `"k": "s"` with `"n"` (a sitemap and its level), `"v"`
 * (the host that vouched for a sitemap), `"m"` (lastmod).
 */
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
}

export function encodeItem(q: QueuedUrl): string {
  const stored: StoredItem = { u: q.url, d: q.depth, r: q.referrer, h: q.hops };
  if (q.paced > 0) stored.p = q.paced;
  if (q.sitemapLevel !== null) Object.assign(stored, { k: 's', n: q.sitemapLevel });
  if (q.vouchedBy !== null) stored.v = q.vouchedBy;
  if (q.lastmod !== null) stored.m = q.lastmod;
  return JSON.stringify(stored);
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
    };
  } catch {
    return null;
  }
}
