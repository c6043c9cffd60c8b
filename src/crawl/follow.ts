import type { FairQueue } from '../queue/index.js';
import { bloomParams, bloomPositions, type BloomParams } from './bloom.js';
import type { FetchResult } from './fetch.js';
import { encodeItem, type CrawlItem } from './keys.js';
import { extractLinksAsync, headerNofollow } from './links.js';
import { normalizeToUrl, normalizeUrl } from './normalize.js';
import type { Tallies } from './tally.js';
import type { Scope } from './scope.js';
import type { Seed } from './seed.js';
import type { OnPage } from './worker-options.js';

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
 * depth-checked, then enqueued through the shared Bloom filter with one
 * queue call per target domain (concurrent, coalesced per queue).
 */
export class LinkFollower {
  private readonly bloom: BloomParams;

  constructor(
    private readonly queue: FairQueue,
    private readonly seed: Seed,
    private readonly scope: Scope,
    private readonly onPage?: OnPage,
  ) {
    this.bloom = bloomParams(seed.bloom.expectedUrls, seed.bloom.falsePositiveRate);
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
    const byDomain = new Map<string, string[]>();
    if (this.seed.maxDepth === null || depth <= this.seed.maxDepth) {
      for (const [n, u] of seen) {
        const d = this.scope.decide(n, u);
        if (!d.ok) continue;
        const list = byDomain.get(d.domain) ?? [];
        list.push(n);
        byDomain.set(d.domain, list);
      }
    }
    const counts = await Promise.all([...byDomain].map(([target, urls]) => this.enqueue(target, urls.map((u) => ({ u, d: depth, r: item.u, h: 0 })))));
    const enqueued = counts.reduce((a, b) => a + b, 0);
    const candidates = [...byDomain.values()].reduce((a, l) => a + l.length, 0);
    return {
      links: seen.size,
      enqueued,
      title,
      error,
      tallies: [['enqueued', enqueued], ['dedupeHits', candidates - enqueued], ['malformed', malformed]],
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
    const d = this.scope.decide(target);
    if (!d.ok) return { target, error: `redirect target ${d.reason}`, tallies: [] };
    const n = await this.enqueue(d.domain, [{ u: target, d: item.d, r: item.u, h: item.h + 1 }]);
    return { target, error: null, tallies: [['enqueued', n]] };
  }

  private enqueue(domain: string, items: CrawlItem[]): Promise<number> {
    return this.queue.enqueue(this.seed.arena, domain, items.map(encodeItem), { dedupe: items.map((i) => bloomPositions(i.u, this.bloom)) });
  }
}
