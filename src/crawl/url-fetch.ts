import { isWeirError } from '../errors.js';
import type { Lease } from '../queue/index.js';
import type { CrawlMetrics } from './counters/index.js';
import { type Fetcher, isHtml, type FetchOptions, type FetchResult, pageText } from './fetch/index.js';
import { classifyResponse, commit, fetchFailed, release, retryLater, slowDown, type Outcome, type SendPacer, type SitePace } from './lease/index.js';
import { type LinkFollower, SITEMAP_LIMITS, SitemapReader, sitemapHosts } from './links/index.js';
import type { PageRecord } from './output/index.js';
import { encodeItem, type QueuedUrl } from './store/index.js';
import { serverAddress } from './servers/index.js';
import type { Revisits } from './revisit/index.js';

/** What fetching a URL in its slot needs of the worker. */
export interface UrlFetchDeps {
  pacer: SendPacer;
  /** A Retry-After met: its domain's requests held ahead are not sent, here and in the other workers. */
  pauseHeard: (queue: string, ms: number) => void;
  /** Each fetch's time and health, for the domain's learned pace (seed adaptivePace). */
  pace: SitePace;
  fetcher: Fetcher;
  links: LinkFollower;
  /** The worker's fetches stop with this (stopping: the lease goes back). */
  signal: AbortSignal;
  tally: { add(domain: string, name: 'bytes', n: number): void };
  metrics?: CrawlMetrics | undefined;
  maxBodyBytes: number;
  retryBaseMs?: number | undefined;
  pacingFloorMs?: number | undefined;
  /** With the seed's revisit: each page's next visit. */
  revisits?: Revisits | undefined;
}

/** Fetch errors that tell of a site under strain, for its learned pace. */
const SITE_STRAIN = ['WEIR_TIMEOUT', 'WEIR_CONNECT', 'WEIR_RESET', 'WEIR_NETWORK'] as const;

const looksLikeHtml = (text: string): boolean => /^\s*<(!doctype html|html|head|body)/i.test(text.slice(0, 512));

/**
 * A URL the worker may fetch (robots.txt allows it, a page of maxPages is
 * reserved): its request held to the lease's slot and sent only if still
 * in time, its response classified (a redirect queues its target,
 * Retry-After pauses the domain, 5xx retries), and a final page's links or
 * a sitemap's URLs followed. Each ends in the lease's Outcome.
 */
export class UrlFetch {
  constructor(private readonly d: UrlFetchDeps) {}

  /**
   * One request in the lease's rate slot: held until the slot, sent only if
   * still in time (the send gate). An Outcome when it was not had: stopping,
   * too late for its slot, or a fetch error to retry.
   */
  private async inSlot(lease: Lease, url: string, opts: Omit<FetchOptions, 'signal' | 'gate'>): Promise<FetchResult | Outcome> {
    const address = serverAddress(lease.queue);
    const send = await this.d.pacer.hold(lease, this.d.signal, this.d.fetcher.prepare(url, address));
    if (send === null) return release();
    try {
      const res = await this.d.fetcher.fetch(url, { ...opts, signal: this.d.signal, gate: send, address });
      this.d.metrics?.fetchSeconds.observe(res.elapsedMs / 1000);
      this.d.tally.add(lease.queue, 'bytes', res.bytes);
      await this.d.pace.observe(lease.queue, res.elapsedMs, res.status < 500 && res.status !== 429);
      return res;
    } catch (err) {
      // The archive failed: the worker's fault, not the site's (the worker decides: worker.ts).
      if (isWeirError(err, 'WEIR_WARC')) throw err;
      // Not sent: stopping, too late for its slot (counted by the pacer), or
      // its domain asked a worker for a pause since the lease was taken (SendPacer.notePause).
      if (this.d.signal.aborted || isWeirError(err, 'WEIR_LATE')) return release();
      const elapsedMs = (err as { elapsedMs?: number }).elapsedMs ?? 0;
      this.d.metrics?.fetchSeconds.observe(elapsedMs / 1000);
      // (A site that times out, refuses or drops connections is struggling; a name that does not resolve, or bad TLS, says nothing of its load.)
      if (SITE_STRAIN.some((code) => isWeirError(err, code))) await this.d.pace.observe(lease.queue, elapsedMs, false);
      return fetchFailed(err, lease.attempt, this.d.retryBaseMs);
    } finally {
      send.done();
    }
  }

  /** A page: fetched in its slot, its lease renewed meanwhile; then classified. */
  async page(lease: Lease, item: QueuedUrl): Promise<Outcome> {
    const wantBody = (ct: string | null, status: number): boolean => status >= 200 && status < 300 && (ct === null || isHtml(ct));
    const rv = this.d.revisits;
    const res = await this.inSlot(lease, item.url, { wantBody, headers: rv?.headersFor(item), revisitOf: rv?.revisitOf(item) });
    if ('kind' in res) return res;
    return this.classified(lease, item, res, (rec) => this.final(item, res, rec));
  }

  /** A response, page or sitemap: a redirect queues its target; Retry-After paces; 5xx retries; else `final`. */
  private async classified(lease: Lease, item: QueuedUrl, res: FetchResult, final: (rec: Partial<PageRecord>) => Promise<Outcome>): Promise<Outcome> {
    const rec = { status: res.status, contentType: res.contentType, bytes: res.bytes, elapsedMs: res.elapsedMs, warc: res.warc };
    switch (classifyResponse(res)) {
      case 'redirect': {
        const r = await this.d.links.redirect(item, res);
        return commit({ ...rec, redirect: r.target, error: r.error }, [['redirects', 1], ...r.tallies]);
      }
      case 'slow-down': {
        const o = slowDown(res, item.paced, this.d.pacingFloorMs);
        if (o.kind === 'pause') {
          this.d.pauseHeard(lease.queue, o.ms);
          return { ...o, item: encodeItem({ ...item, paced: item.paced + 1 }) };
        }
        return o.kind === 'fail' ? { ...o, record: { ...rec, ...o.record } } : o;
      }
      case 'server-error':
        return retryLater(lease.attempt, `HTTP ${res.status}`, rec, this.d.retryBaseMs);
      case 'final':
        return final(rec);
    }
  }

  /**
   * A sitemap: fetched in its slot like a page (robots.txt was checked), read
   * as it streams (links/sitemap.ts); its pages queued at depth 0, its child
   * sitemaps one level down. Redirects, Retry-After and 5xx as for pages.
   */
  async sitemap(lease: Lease, item: QueuedUrl): Promise<Outcome> {
    const reader = new SitemapReader();
    const rv = this.d.revisits;
    const wantBody = (_ct: string | null, status: number): boolean => status >= 200 && status < 300;
    const res = await this.inSlot(lease, item.url, { wantBody, maxBytes: SITEMAP_LIMITS.maxBytes, sink: (c) => reader.write(c), headers: rv?.headersFor(item), revisitOf: rv?.revisitOf(item) });
    if ('kind' in res) return res;
    return this.classified(lease, item, res, async (rec) => {
      // With revisits, a sitemap is read again on its own schedule (its new entries found; the rest dropped as seen).
      const visit = rv?.observe(item, res);
      const end = (record: Partial<PageRecord>, tallies: Outcome['tallies']): Promise<Outcome> | Outcome => (visit && rv ? rv.outcome(item, visit, record, tallies) : commit(record, tallies));
      if (visit?.notModified) return end(rec, [['sitemaps', 1]]);
      if (res.status < 200 || res.status >= 300) return end({ ...rec, error: `sitemap: HTTP ${res.status}` }, [['sitemaps', 1]]);
      const map = await reader.end();
      const pages = await this.d.links.sitemapPages(item, map.urls);
      // An index lists sitemaps on the hosts it may speak for; they inherit its depth and voucher.
      const from = { base: item.url, level: (item.sitemapLevel ?? 0) + 1, depth: item.depth, vouchedBy: item.vouchedBy, hosts: sitemapHosts(item) };
      const children = await this.d.links.sitemaps(map.sitemaps.map((s) => s.loc), from);
      const ignored = map.ignored + pages.ignored + children.ignored;
      const enqueued = pages.enqueued + children.enqueued;
      return end(
        {
          ...rec,
          links: map.urls.length + map.sitemaps.length,
          enqueued,
          error: map.truncated ? `sitemap cut at ${SITEMAP_LIMITS.maxBytes} bytes uncompressed` : map.error,
          sitemap: { format: map.format, urls: map.urls.length, sitemaps: map.sitemaps.length, ignored, truncated: map.truncated },
        },
        [['sitemaps', 1], ['sitemapUrls', pages.inScope], ['sitemapIgnored', ignored], ['enqueued', enqueued], ['dedupeHits', pages.inScope - pages.enqueued]],
      );
    });
  }

  /**
   * A final response: its links followed when it is HTML (on a revisit, only
   * when the page changed: the same payload has the same links); with
   * revisits, its next visit decided.
   */
  private async final(item: QueuedUrl, res: FetchResult, rec: Partial<PageRecord>): Promise<Outcome> {
    const tallies: Outcome['tallies'] = [['pages', 1], [`${Math.floor(res.status / 100)}xx` as '2xx', 1]];
    let record = { ...rec, error: res.truncated ? `body over ${this.d.maxBodyBytes} bytes: truncated` : null } as Parameters<typeof commit>[0];
    const visit = this.d.revisits?.observe(item, res);
    if (res.status >= 200 && res.status < 300 && res.body && visit?.changed !== false) {
      const page = pageText(res.body, res.contentType);
      if (res.contentType !== null || looksLikeHtml(page.markup)) {
        const f = await this.d.links.follow(item, res, page);
        record = { ...record, links: f.links, enqueued: f.enqueued, title: f.title, ...(f.error ? { error: f.error } : {}) };
        tallies.push(...f.tallies);
      }
    }
    return visit && this.d.revisits ? this.d.revisits.outcome(item, visit, record, tallies) : commit(record, tallies, true);
  }
}
