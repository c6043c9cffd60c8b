import type { FairQueue } from '../../queue/index.js';
import { bloomParams, bloomPositions, type BloomParams, type LocalSeen } from '../dedupe/index.js';
import type { FetchResult } from '../fetch/index.js';
import { encodeItem, type CrawlItem } from '../store/index.js';
import { extractLinksAsync, headerNofollow } from './extract.js';
import { normalizeToUrl, normalizeUrl } from '../urls/index.js';
import type { Tallies } from '../counters/index.js';
import type { Scope } from './scope.js';
import type { Seed } from '../seed/index.js';
import { SITEMAP_LIMITS, type SitemapEntry } from './sitemap.js';
import type { OnPage } from './on-page.js';

function push<T>(map: Map<string, T[]>, key: string, value: T): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

export interface FollowedPage {
  links: number;
  enqueued: number;
  title: string | null;
  error: string | null;
  tallies: Tallies;
}

/**
 * A page's links to new queued URLs: extracted (htmlparser2, plus the
 * user's onPage), normalised, deduped within the page, scoped, filtered,
 * depth-checked, passed over when this worker already offered them (its
 * local filter), then enqueued through the shared Bloom filter: one
 * enqueue per target domain, all made in one turn of the event loop, which
 * the queue client sends as one script call.
 */
export class LinkFollower {
  /** The arena's bitmap as configured (read once: kickoff may have kept an older sizing), else the seed's. */
  private bitmap: Promise<BloomParams> | undefined;

  constructor(
    private readonly queue: FairQueue,
    private readonly seed: Seed,
    private readonly scope: Scope,
    /** What this worker has already offered to Redis (dedupe/local-seen.ts). */
    private readonly localSeen: LocalSeen,
    private readonly onPage?: OnPage,
  ) {
  }

  /** The page's hrefs to follow (nofollow honoured) and the onPage hook's extra URLs. */
  private async hrefs(item: CrawlItem, res: FetchResult, text: string): Promise<{ hrefs: string[]; base: string; title: string | null; error: string | null }> {
    const page = await extractLinksAsync(text, this.seed.productToken);
    const nofollow = this.seed.respectNofollow && (page.metaNofollow || headerNofollow(res.headers['x-robots-tag'], this.seed.productToken));
    const hrefs = nofollow ? [] : this.seed.respectNofollow ? page.hrefs : [...page.hrefs, ...page.nofollowHrefs];
    const base = page.base === null ? item.u : (normalizeUrl(page.base, item.u) ?? item.u);
    let error: string | null = null;
    if (this.onPage) {
      try {
        const extra = await this.onPage({ url: item.u, status: res.status, headers: res.headers, body: text, $: async () => (await import('cheerio')).load(text) });
        if (Array.isArray(extra)) hrefs.push(...extra.filter((u): u is string => typeof u === 'string'));
      } catch (err) {
        error = `onPage hook failed: ${(err as Error).message}`;
      }
    }
    return { hrefs, base, title: page.title, error };
  }

  async follow(item: CrawlItem, res: FetchResult, text: string): Promise<FollowedPage> {
    const { hrefs, base, title, error } = await this.hrefs(item, res, text);
    const seen = new Map<string, URL>();
    const baseUrl = new URL(base);
    let malformed = 0;
    for (const href of hrefs) {
      const u = normalizeToUrl(href, baseUrl);
      if (!u) malformed++;
      else if (!seen.has(u.href)) seen.set(u.href, u);
    }
    const depth = item.d + 1;
    const byDomain = new Map<string, CrawlItem[]>();
    let localHits = 0;
    if (this.seed.maxDepth === null || depth <= this.seed.maxDepth) {
      for (const [n, u] of seen) {
        const d = this.scope.decide(n, u);
        if (!d.ok) continue;
        if (this.localSeen.has(n)) localHits++;
        else push(byDomain, d.domain, { u: n, d: depth, r: item.u, h: 0 });
      }
    }
    const offered = [...byDomain.values()].flatMap((items) => items.map((i) => i.u));
    // Offered from now: another page of this worker that links them meanwhile leaves them to this call.
    this.localSeen.offering(offered);
    // Remembered only once Redis has answered for them: a failed call leaves them to be offered again.
    const result = this.enqueueGrouped(byDomain);
    result.then(
      () => this.localSeen.settle(offered, true),
      () => this.localSeen.settle(offered, false),
    );
    const { candidates, enqueued } = await result;
    return {
      links: seen.size,
      enqueued,
      title,
      error,
      tallies: [['enqueued', enqueued], ['dedupeHits', candidates - enqueued + localHits], ['localHits', localHits], ['malformed', malformed]],
    };
  }

  /**
   * A redirect is not followed inline: its target is queued as a new URL
   * (scope, robots, dedupe and the rate limit apply). Returns the target
   * (null when unusable) and why it was not queued, if it was not.
   */
  async redirect(item: CrawlItem, res: FetchResult): Promise<{ target: string | null; error: string | null; tallies: Tallies }> {
    const loc = Array.isArray(res.headers.location) ? res.headers.location[0] : res.headers.location;
    const target = loc === undefined ? null : normalizeUrl(loc, item.u);
    if (!target) return { target, error: 'redirect to a malformed or non-http URL', tallies: [['malformed', 1]] };
    if (item.h + 1 > this.seed.maxRedirects) return { target, error: `more than ${this.seed.maxRedirects} redirects`, tallies: [] };
    // A sitemap's redirect leads to a sitemap: only its domain is in question.
    const d = item.k === 's' ? this.scope.decideDomain(target) : this.scope.decide(target);
    if (!d.ok) return { target, error: `redirect target ${d.reason}`, tallies: [] };
    const { k, n: level, m } = item;
    const n = await this.enqueue(d.domain, [{ u: target, d: item.d, r: item.u, h: item.h + 1, ...(k ? { k, n: level ?? 0 } : {}), ...(m ? { m } : {}) }]);
    return { target, error: null, tallies: [['enqueued', n]] };
  }

  /**
   * Sitemaps to read (listed by robots.txt, the seed, or an index file at
   * `level` - 1): each inside a crawl domain (include/exclude are for pages),
   * queued like any URL (so a sitemap listed twice, or an index listing
   * itself, is read once). Those past the nesting limit are not queued.
   */
  async sitemaps(locs: string[], base: string, level: number, referrer: string | null): Promise<{ enqueued: number; ignored: number }> {
    if (level > SITEMAP_LIMITS.maxNesting) return { enqueued: 0, ignored: locs.length };
    const byDomain = new Map<string, CrawlItem[]>();
    let ignored = 0;
    for (const loc of locs) {
      const u = normalizeToUrl(loc, base);
      const d = u ? this.scope.decideDomain(u.href, u) : null;
      if (u && d?.ok) push(byDomain, d.domain, { u: u.href, d: 0, r: referrer, h: 0, k: 's', n: level });
      else ignored++;
    }
    return { enqueued: (await this.enqueueGrouped(byDomain)).enqueued, ignored };
  }

  /** A sitemap's page URLs: at depth 0, like start URLs, but through scope, include/exclude and dedupe; each keeps its lastmod. */
  async sitemapPages(sitemap: CrawlItem, entries: SitemapEntry[]): Promise<{ inScope: number; enqueued: number }> {
    const byDomain = new Map<string, CrawlItem[]>();
    const seen = new Set<string>();
    const base = new URL(sitemap.u);
    for (const e of entries) {
      const u = normalizeToUrl(e.loc, base);
      if (!u || seen.has(u.href)) continue;
      seen.add(u.href);
      const d = this.scope.decide(u.href, u);
      if (d.ok) push(byDomain, d.domain, { u: u.href, d: 0, r: sitemap.u, h: 0, ...(e.lastmod ? { m: e.lastmod } : {}) });
    }
    const { candidates, enqueued } = await this.enqueueGrouped(byDomain);
    return { inScope: candidates, enqueued };
  }

  /** One enqueue per target domain, all at once (one script call): how many were offered and how many were new. */
  private async enqueueGrouped(byDomain: Map<string, CrawlItem[]>): Promise<{ candidates: number; enqueued: number }> {
    const counts = await Promise.all([...byDomain].map(([domain, items]) => this.enqueue(domain, items)));
    return { candidates: [...byDomain.values()].reduce((a, l) => a + l.length, 0), enqueued: counts.reduce((a, b) => a + b, 0) };
  }

  private arenaBitmap(): Promise<BloomParams> {
    if (!this.bitmap) {
      const { expectedUrls, falsePositiveRate } = this.seed.bloom;
      const read = this.queue.dedupeConfig(this.seed.arena).then((c) => c ?? bloomParams(expectedUrls, falsePositiveRate));
      // (A failed read is not kept: the next enqueue asks again.)
      read.catch(() => (this.bitmap = undefined));
      this.bitmap = read;
    }
    return this.bitmap;
  }

  private async enqueue(domain: string, items: CrawlItem[]): Promise<number> {
    const bloom = await this.arenaBitmap();
    return this.queue.enqueue(this.seed.arena, domain, items.map(encodeItem), { dedupe: items.map((i) => bloomPositions(i.u, bloom)) });
  }
}
