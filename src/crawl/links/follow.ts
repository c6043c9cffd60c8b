import type { FairQueue, QueueLimit } from '../../queue/index.js';
import type { DomainClaims } from '../store/index.js';
import type { DomainQuota } from '../lease/index.js';
import { bloomParams, type BloomParams, type LocalSeen } from '../dedupe/index.js';
import type { FetchResult, PageText } from '../fetch/index.js';
import { queuedUrl, type QueuedUrl } from '../store/index.js';
import { ByDomain, enqueueUrls, type QueueRouter } from './enqueue.js';
import { extractLinksAsync, headerNofollow } from './extract.js';
import { normalizeToUrl, normalizeUrl } from '../urls/index.js';
import type { Tallies } from '../counters/index.js';
import type { Scope, ScopeDecision } from './scope.js';
import type { Seed } from '../seed/index.js';
import { SITEMAP_LIMITS, type SitemapEntry } from './sitemap.js';
import type { OnPage } from './on-page.js';

/** Where a list of sitemaps was found, and what the sitemaps it lists inherit. */
export interface SitemapSource {
  /** The robots.txt or index sitemap that lists them (their referrer, and the base of relative locations). */
  base: string;
  /** Their nesting: 0 for robots.txt's, the index's + 1 for an index's. */
  level: number;
  /** The depth their pages get (see QueuedUrl.depth). */
  depth: number;
  /** The host that vouches for them (robots.txt's host, or the index's voucher). */
  vouchedBy: string | null;
  /** The hosts they must be on (an index lists only its own host's, or its voucher's); null: any (robots.txt may name a sitemap anywhere). */
  hosts: string[] | null;
}

/** Budget rounds one list of sitemaps may take: places handed back by those already seen go to the next ones listed. */
const SITEMAP_BUDGET_ROUNDS = 4;

/** What may be spent on sitemaps found (robots.txt, index files): maxSitemaps, across every worker. */
export interface SitemapBudget {
  reserveUpTo(n: number): Promise<number>;
  unreserveMany(n: number): Promise<void>;
}

/**
 * The hosts a sitemap may list pages (or child sitemaps) on: its own and
 * the host that vouched for it (sitemaps.org: a sitemap speaks only for
 * its own host unless that host's robots.txt names it). A host is the
 * URL's host with its port (another port is another server); the scheme
 * is not compared (an http sitemap may list its https pages).
 */
export function sitemapHosts(sitemap: Pick<QueuedUrl, 'url' | 'vouchedBy'>): string[] {
  const own = new URL(sitemap.url).host;
  return sitemap.vouchedBy !== null && sitemap.vouchedBy !== own ? [own, sitemap.vouchedBy] : [own];
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
    private readonly sitemapBudget: SitemapBudget,
    /** Places among otherDomains.maxDomains (null: the seed follows no other domains). */
    private readonly claims: DomainClaims | null,
    /** maxPagesPerDomain: links to a domain known to be full are not queued. */
    private readonly quota: DomainQuota | null,
    /** With perServer: the server queue each URL goes to. */
    private readonly router: QueueRouter | undefined,
    private readonly onPage?: OnPage,
  ) {
    const other = seed.otherDomains;
    this.otherLimits = other ? { rate: other.rate, maxInFlight: other.maxInFlight } : undefined;
  }

  /** The limits a new domain's queue is created with. */
  private readonly otherLimits: QueueLimit | undefined;

  /** The page's hrefs to follow (nofollow honoured) and the onPage hook's extra URLs. */
  private async hrefs(item: QueuedUrl, res: FetchResult, text: PageText): Promise<{ hrefs: string[]; base: string; title: string | null; error: string | null }> {
    const page = await extractLinksAsync(text.markup, this.seed.productToken, text.text);
    const nofollow = this.seed.respectNofollow && (page.metaNofollow || headerNofollow(res.headers['x-robots-tag'], this.seed.productToken));
    const hrefs = nofollow ? [] : this.seed.respectNofollow ? page.hrefs : [...page.hrefs, ...page.nofollowHrefs];
    const base = page.base === null ? item.url : (normalizeUrl(page.base, item.url) ?? item.url);
    let error: string | null = null;
    if (this.onPage) {
      try {
        const body = text.whole();
        const extra = await this.onPage({ url: item.url, status: res.status, headers: res.headers, body, $: async () => (await import('cheerio')).load(body) });
        if (Array.isArray(extra)) hrefs.push(...extra.filter((u): u is string => typeof u === 'string'));
      } catch (err) {
        error = `onPage hook failed: ${(err as Error).message}`;
      }
    }
    return { hrefs, base, title: page.title, error };
  }

  async follow(item: QueuedUrl, res: FetchResult, text: PageText): Promise<FollowedPage> {
    const { hrefs, base, title, error } = await this.hrefs(item, res, text);
    const seen = new Map<string, URL>();
    const baseUrl = new URL(base);
    let malformed = 0;
    // A page repeats many of its hrefs (navigation, the index on every page): each written form is normalised once.
    const written = new Set<string>();
    for (const href of hrefs) {
      if (written.has(href)) continue;
      written.add(href);
      const u = normalizeToUrl(href, baseUrl);
      if (!u) malformed++;
      else if (!seen.has(u.href)) seen.set(u.href, u);
    }
    const depth = item.depth + 1;
    const byDomain = new ByDomain();
    let localHits = 0;
    if (this.withinDepth(depth)) {
      // (Decided together: any domain-list lookups go to Redis as one call.)
      const links = [...seen];
      const decisions = await Promise.all(links.map(([n, u]) => this.scope.decide(n, u)));
      for (const [i, [n]] of links.entries()) {
        const d = decisions[i] as ScopeDecision;
        if (!d.ok) continue;
        if (this.localSeen.has(n)) localHits++;
        else byDomain.add(d.domain, queuedUrl(n, { depth, referrer: item.url }), d.other, d.limits);
      }
    }
    const offered = byDomain.urls();
    // Offered from now: another page of this worker that links them meanwhile leaves them to this call.
    this.localSeen.offering(offered);
    // Remembered only once Redis has answered for them: a failed call leaves them to be offered again.
    // (A link dropped at maxDomains is remembered too: the crawl will never take its domain.)
    const result = this.enqueueGrouped(byDomain);
    result.then(
      () => this.localSeen.settle(offered, true),
      () => this.localSeen.settle(offered, false),
    );
    const { candidates, enqueued, tallies } = await result;
    return {
      links: seen.size,
      enqueued,
      title,
      error,
      tallies: [['enqueued', enqueued], ['dedupeHits', candidates - enqueued + localHits], ['localHits', localHits], ['malformed', malformed], ...tallies],
    };
  }

  /**
   * A redirect is not followed inline: its target is queued as a new URL
   * (scope, robots, dedupe and the rate limit apply). Returns the target
   * (null when unusable) and why it was not queued, if it was not.
   */
  async redirect(item: QueuedUrl, res: FetchResult): Promise<{ target: string | null; error: string | null; tallies: Tallies }> {
    const loc = Array.isArray(res.headers.location) ? res.headers.location[0] : res.headers.location;
    const target = loc === undefined ? null : normalizeUrl(loc, item.url);
    if (!target) return { target, error: 'redirect to a malformed or non-http URL', tallies: [['malformed', 1]] };
    if (item.hops + 1 > this.seed.maxRedirects) return { target, error: `more than ${this.seed.maxRedirects} redirects`, tallies: [] };
    // A sitemap's redirect leads to a sitemap: only its domain is in question.
    const d = await (item.sitemapLevel !== null ? this.scope.decideDomain(target) : this.scope.decide(target));
    if (!d.ok) return { target, error: `redirect target ${d.reason}`, tallies: [] };
    const batch = new ByDomain();
    // A sitemap's host vouches for where it sends its reader (one voucher is kept: the first).
    const vouchedBy = item.sitemapLevel !== null ? (item.vouchedBy ?? new URL(item.url).host) : item.vouchedBy;
    batch.add(d.domain, { ...item, url: target, referrer: item.url, hops: item.hops + 1, paced: 0, vouchedBy }, d.other, d.limits);
    const { enqueued: n, tallies } = await this.enqueueGrouped(batch);
    if (batch.count === 0) return { target, error: 'redirect target on a new domain past maxDomains', tallies };
    return { target, error: null, tallies: [['enqueued', n], ...tallies] };
  }

  /**
   * Sitemaps to read (listed by robots.txt, the seed, or an index file at
   * `level` - 1): each inside a crawl domain (include/exclude are for pages)
   * and on a host `from` allows, queued like any URL (so a sitemap listed
   * twice, or an index listing itself, is read once), under the crawl's
   * maxSitemaps, which counts the sitemaps queued (one listed again, here
   * or since it was first found, costs none). None when past the nesting
   * limit, or when their pages would be past maxDepth.
   */
  async sitemaps(locs: string[], from: SitemapSource): Promise<{ enqueued: number; ignored: number }> {
    if (from.level > SITEMAP_LIMITS.maxNesting || !this.withinDepth(from.depth)) return { enqueued: 0, ignored: locs.length };
    const wanted = new Map<string, { decided: ScopeDecision & { ok: true }; item: QueuedUrl }>();
    const base = new URL(from.base);
    const listed = new Map<string, URL>();
    for (const loc of locs) {
      const u = normalizeToUrl(loc, base);
      if (u && !listed.has(u.href) && (from.hosts === null || from.hosts.includes(u.host))) listed.set(u.href, u);
    }
    const urls = [...listed.values()];
    const decisions = await Promise.all(urls.map((u) => this.scope.decideDomain(u.href, u)));
    for (const [i, u] of urls.entries()) {
      const d = decisions[i] as ScopeDecision;
      if (d.ok) wanted.set(u.href, { decided: d, item: queuedUrl(u.href, { referrer: from.base, sitemapLevel: from.level, depth: from.depth, vouchedBy: from.vouchedBy }) });
    }
    // Those the dedupe filter had seen (read already, or queued) cost nothing:
    // their places go back, and to the next ones listed (a few rounds at most).
    let rest = [...wanted.values()];
    let enqueued = 0;
    for (let round = 0; round < SITEMAP_BUDGET_ROUNDS && rest.length > 0; round++) {
      const granted = await this.sitemapBudget.reserveUpTo(rest.length);
      if (granted === 0) break;
      const byDomain = new ByDomain();
      for (const w of rest.slice(0, granted)) byDomain.add(w.decided.domain, w.item, w.decided.other, w.decided.limits);
      rest = rest.slice(granted);
      const n = (await this.enqueueGrouped(byDomain)).enqueued;
      enqueued += n;
      await this.sitemapBudget.unreserveMany(granted - n);
    }
    return { enqueued, ignored: locs.length - (wanted.size - rest.length) };
  }

  /**
   * A sitemap's page URLs, at the sitemap's depth (like start URLs when the
   * seed lists it), through scope, include/exclude and dedupe, each keeping
   * its lastmod; only those on a host the sitemap may speak for (sitemapHosts).
   */
  async sitemapPages(sitemap: QueuedUrl, entries: SitemapEntry[]): Promise<{ inScope: number; enqueued: number; ignored: number }> {
    if (!this.withinDepth(sitemap.depth)) return { inScope: 0, enqueued: 0, ignored: entries.length };
    const byDomain = new ByDomain();
    const seen = new Set<string>();
    const base = new URL(sitemap.url);
    const hosts = sitemapHosts(sitemap);
    let ignored = 0;
    const kept: [URL, SitemapEntry][] = [];
    for (const e of entries) {
      const u = normalizeToUrl(e.loc, base);
      if (!u || seen.has(u.href)) continue;
      seen.add(u.href);
      if (hosts.includes(u.host)) kept.push([u, e]);
      else ignored++;
    }
    const decisions = await Promise.all(kept.map(([u]) => this.scope.decide(u.href, u)));
    for (const [i, [u, e]] of kept.entries()) {
      const d = decisions[i] as ScopeDecision;
      if (d.ok) byDomain.add(d.domain, queuedUrl(u.href, { depth: sitemap.depth, referrer: sitemap.url, lastmod: e.lastmod ?? null }), d.other, d.limits);
    }
    const { candidates, enqueued } = await this.enqueueGrouped(byDomain);
    return { inScope: candidates, enqueued, ignored };
  }

  private withinDepth(depth: number): boolean {
    return this.seed.maxDepth === null || depth <= this.seed.maxDepth;
  }

  /**
   * Enqueued (links/enqueue.ts): how many were offered and how many were
   * new. URLs on domains the seed does not list go only to those granted a
   * place among maxDomains (the rest are dropped from `byDomain`, counted).
   */
  private async enqueueGrouped(byDomain: ByDomain): Promise<{ candidates: number; enqueued: number; tallies: Tallies }> {
    const tallies: Tallies = [];
    if (this.quota) {
      let full = 0;
      for (const domain of [...byDomain.groups.keys()]) if (this.quota.isFull(domain)) full += byDomain.drop(domain);
      if (full > 0) tallies.push(['quotaSkips', full]);
    }
    if (byDomain.others.size > 0) {
      if (!this.claims) throw new Error('a URL on a domain the seed does not list, in a crawl that follows none');
      const { granted, created, refused } = await this.claims.claim(byDomain.others);
      let dropped = 0;
      for (const domain of [...byDomain.others]) if (!granted.has(domain)) dropped += byDomain.drop(domain);
      if (created > 0) tallies.push(['newDomains', created]);
      if (refused > 0) tallies.push(['domainCapDrops', dropped]);
    }
    const candidates = byDomain.count;
    const enqueued = candidates === 0 ? 0 : await enqueueUrls(this.queue, this.seed.arena, await this.arenaBitmap(), byDomain, { otherLimits: this.otherLimits, priorityDepth: this.seed.priorityDepth, router: this.router });
    return { candidates, enqueued, tallies };
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
}
