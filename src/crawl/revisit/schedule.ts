import { createHash } from 'node:crypto';
import CachePolicy from 'http-cache-semantics';
import type { RevisitPolicy } from '../seed/index.js';
import type { VisitRecord } from '../store/index.js';

/** After a visit that found a change, the interval is multiplied by this; after one that found none, by GROW. */
export const SHRINK = 0.5;
export const GROW = 1.5;
/** Validators longer than this are not kept (an item carries them between visits). */
const MAX_VALIDATOR_BYTES = 256;

/** What one visit's response says, as much as the schedule needs of it. */
export interface VisitResponse {
  url: string;
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The decoded body when it was read, for its digest. */
  body: Buffer | null;
  /** Where it was archived (--warc): its record's WARC-Date is the capture's time, and its payload digest. */
  warc?: { date?: string | undefined; payloadDigest?: string | undefined } | null;
}

/** What a visit found, and when the next one is. */
export interface VisitOutcome {
  record: VisitRecord;
  /** Whether the page changed since the last visit: null on a first visit, or when nothing tells (no digest, no validators). */
  changed: boolean | null;
  /** The server answered 304 to the conditional request. */
  notModified: boolean;
  /** The page went away (404/410) after it had been there. */
  gone: boolean;
  /** ms until the next visit; null when the URL is not visited again. */
  nextMs: number | null;
}

const header = (h: VisitResponse['headers'], name: string): string | null => {
  const v = h[name];
  const s = Array.isArray(v) ? v[0] : v;
  return s !== undefined && Buffer.byteLength(s) <= MAX_VALIDATOR_BYTES ? s : null;
};

/** The payload digest kept per URL: SHA-1 of the decoded body, base64url (27 characters). */
export const payloadDigest = (body: Buffer): string => createHash('sha1').update(body).digest('base64url');

/** The request headers that make a revisit conditional (RFC 9110 §13.1): the last validators the server gave. */
export function conditionalHeaders(visit: VisitRecord | null): Record<string, string> {
  const h: Record<string, string> = {};
  if (visit?.etag) h['if-none-match'] = visit.etag;
  if (visit?.lastModified) h['if-modified-since'] = visit.lastModified;
  return h;
}

/** How long the response says it stays fresh, seconds (Cache-Control max-age, Expires; http-cache-semantics), 0 when it does not. */
function freshSeconds(res: VisitResponse): number {
  if (res.status < 200 || res.status >= 300) return 0;
  const policy = new CachePolicy({ url: res.url, method: 'GET', headers: {} }, { status: res.status, headers: res.headers }, { shared: false });
  // (Rounded: the policy counts the response's age from when it was made, a millisecond or so ago.)
  return policy.storable() ? Math.round(policy.timeToLive() / 1000) : 0;
}

/**
 * The schedule of one URL (the rule, as Nutch's AdaptiveFetchSchedule and
 * StormCrawler's AdaptiveScheduler keep it): its first interval is the
 * seed's initialIntervalSeconds; after a visit that found it changed the
 * interval halves, after one that found it unchanged it grows by half,
 * always within [minIntervalSeconds, maxIntervalSeconds]; a cache lifetime
 * the response gives (max-age, Expires) is a floor within those bounds (no
 * visit before the site says the page may have changed). Changed means: a
 * 2xx whose payload digest differs from the last one (or, without
 * digests, whose ETag or Last-Modified differs); a 304, or the same digest,
 * is unchanged. A page that answers 404 or 410 after it had been there is
 * visited goneAfter more times at a growing interval, then dropped; one
 * that is not there on its first visit is not kept.
 */
export function nextVisit(prev: VisitRecord | null, res: VisitResponse, policy: RevisitPolicy, now = Date.now()): VisitOutcome {
  const notModified = res.status === 304 && prev !== null;
  const archivedAt = res.warc?.date ? Date.parse(res.warc.date) : NaN;
  const fetchedAt = Number.isFinite(archivedAt) ? archivedAt : now;
  const missing = res.status === 404 || res.status === 410;
  const ok = res.status >= 200 && res.status < 300;
  const digest = ok && res.body ? payloadDigest(res.body) : notModified ? (prev?.digest ?? null) : null;
  const etag = header(res.headers, 'etag') ?? (notModified ? (prev?.etag ?? null) : null);
  const lastModified = header(res.headers, 'last-modified') ?? (notModified ? (prev?.lastModified ?? null) : null);
  let changed: boolean | null = null;
  if (prev !== null && !missing) {
    if (notModified) changed = false;
    else if (ok && digest !== null && prev.digest !== null) changed = digest !== prev.digest;
    else if (etag !== null || lastModified !== null) changed = etag !== prev.etag || lastModified !== prev.lastModified;
    else if (res.status !== prev.status) changed = true;
  }
  const gone = missing && prev !== null && prev.status !== 404 && prev.status !== 410 ? 1 : missing && prev !== null ? prev.gone + 1 : 0;
  let intervalS: number = policy.initialIntervalSeconds;
  if (prev !== null) intervalS = changed === true ? prev.intervalS * SHRINK : changed === false || missing ? prev.intervalS * GROW : prev.intervalS;
  intervalS = Math.min(policy.maxIntervalSeconds, Math.max(policy.minIntervalSeconds, intervalS, Math.min(freshSeconds(res), policy.maxIntervalSeconds)));
  const record: VisitRecord = {
    at: now,
    status: notModified ? (prev?.status ?? res.status) : res.status,
    etag,
    lastModified,
    digest: missing ? (prev?.digest ?? null) : digest,
    capturedAt: changed === false ? (prev?.capturedAt ?? fetchedAt) : ok ? fetchedAt : (prev?.capturedAt ?? null),
    warcDigest: changed === false ? (prev?.warcDigest ?? res.warc?.payloadDigest ?? null) : ok ? (res.warc?.payloadDigest ?? null) : (prev?.warcDigest ?? null),
    intervalS: Math.round(intervalS * 1000) / 1000,
    visits: (prev?.visits ?? 0) + 1,
    changes: (prev?.changes ?? 0) + (changed === true ? 1 : 0),
    gone,
  };
  const dropped = missing && (prev === null || gone > policy.goneAfter);
  return { record, changed, notModified, gone: missing && prev !== null, nextMs: dropped ? null : Math.round(record.intervalS * 1000) };
}
