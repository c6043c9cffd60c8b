import { DomainMatcher, parseDomainKey, type DomainKey, compileUrlPattern, newDomainKey, type UrlPattern } from '../urls/index.js';
import type { OtherDomains, Seed, SeedRate } from '../seed/index.js';
import type { DomainList, ListedDomain, ListedLimits } from './domain-list.js';

/**
 * In scope: the domain key (queue) it goes to, whether that is a domain the
 * seed does not list (otherDomains), and for one it lists, the limits its
 * queue is made with should this URL be its first (null for another: those
 * go by otherDomains).
 */
export type ScopeDecision = { ok: true; domain: string; other: boolean; limits: ListedLimits | null } | { ok: false; reason: 'out-of-scope' | 'excluded' | 'not-included' };

/** Of a URL's rateLimits place and its domain list place, the one of the longer key, as among rateLimits keys (the seed's own on a tie). */
function longestPlace(inline: ListedDomain | null, listed: ListedDomain | null): ListedDomain | null {
  return listed !== null && (inline === null || listed.key.length > inline.key.length) ? listed : inline;
}

/**
 * Which URLs a crawl follows and which queue (domain key) each goes to:
 * inside a domain the seed lists — a rateLimits key, or one of its domain
 * list held in Redis (domain-list.ts) — (or, when the seed follows other
 * domains, any http(s) URL, keyed by otherDomains.key), matching an include
 * pattern (when there are any) and no exclude pattern. Asynchronous because
 * a listed domain may have to be looked up: decide a page's links together
 * (Promise.all) and their lookups go to Redis as one call.
 */
export class Scope {
  private readonly matcher: DomainMatcher;
  private readonly include: UrlPattern[];
  private readonly exclude: UrlPattern[];
  private readonly other: OtherDomains | null;

  /** Each rateLimits key with its limits, made once (a kickoff places 10^6 URLs through these). */
  private readonly inlinePlaces = new Map<string, ListedDomain>();

  constructor(
    seed: Pick<Seed, 'rateLimits' | 'include' | 'exclude'> & Partial<Pick<Seed, 'otherDomains' | 'maxInFlightPerDomain'>>,
    /** The seed's domain list (domainFiles, defaultRate); null when it has none. */
    private readonly list: DomainList | null = null,
  ) {
    this.other = seed.otherDomains ?? null;
    const maxInFlight = seed.maxInFlightPerDomain ?? 0;
    for (const [key, rate] of Object.entries(seed.rateLimits)) this.inlinePlaces.set(key, { key, limits: { rate, maxInFlight } });
    const keys = Object.keys(seed.rateLimits).map((k) => parseDomainKey(k) as DomainKey);
    this.matcher = new DomainMatcher(keys);
    this.include = seed.include.map(compileUrlPattern);
    this.exclude = seed.exclude.map(compileUrlPattern);
  }

  /** The rateLimits key a URL is inside of, and its limits. */
  private inlinePlace(parsed: URL): ListedDomain | null {
    const key = this.matcher.match(parsed)?.key;
    return key === undefined ? null : (this.inlinePlaces.get(key) ?? null);
  }

  /** placeOf for many URLs at once (a kickoff batch): their domain list lookups go to Redis together, with no promise a URL. */
  async placesOf(parsed: readonly URL[]): Promise<(ListedDomain | null)[]> {
    const inline = parsed.map((u) => this.inlinePlace(u));
    if (!this.list) return inline;
    const listed = await this.list.matchAll(parsed);
    return inline.map((place, i) => longestPlace(place, listed[i] ?? null));
  }

  /** The domain key (queue) of a normalized URL among those the seed lists, and that domain's limits, ignoring include/exclude; null when outside them. */
  async placeOf(parsed: URL): Promise<ListedDomain | null> {
    const inline = this.inlinePlace(parsed);
    if (!this.list) return inline;
    return longestPlace(inline, await this.list.match(parsed));
  }

  /** The domain key (queue) of a normalized URL, the seed's or a new one, ignoring include/exclude; null when out of scope. */
  async queueOf(url: string): Promise<string | null> {
    const d = await this.decideDomain(url);
    return d.ok ? d.domain : null;
  }

  /**
   * The limits a domain's queue is made with: the seed's for the domains it
   * lists, otherDomains' for the others (null when it follows none).
   */
  async limitsOf(domain: string): Promise<{ rate: SeedRate; maxInFlight: number } | null> {
    const seeded = this.inlinePlaces.get(domain);
    if (seeded) return seeded.limits;
    const listed = this.list ? await this.list.limitsOf(domain) : null;
    if (listed) return listed;
    return this.other && { rate: this.other.rate, maxInFlight: this.other.maxInFlight };
  }

  /** Inside a crawl domain, include/exclude not asked (they are for pages: a sitemap's URL passes on its domain alone). */
  async decideDomain(url: string, parsed: URL = new URL(url)): Promise<ScopeDecision> {
    const place = await this.placeOf(parsed);
    if (place !== null) return { ok: true, domain: place.key, other: false, limits: place.limits };
    if (this.other) return { ok: true, domain: newDomainKey(parsed, this.other.key), other: true, limits: null };
    return { ok: false, reason: 'out-of-scope' };
  }

  /** `url` must already be normalized (pass the parsed URL when you have it). */
  async decide(url: string, parsed: URL = new URL(url)): Promise<ScopeDecision> {
    const inDomain = await this.decideDomain(url, parsed);
    if (!inDomain.ok) return inDomain;
    if (this.exclude.some((r) => r.test(url))) return { ok: false, reason: 'excluded' };
    if (this.include.length > 0 && !this.include.some((r) => r.test(url))) return { ok: false, reason: 'not-included' };
    return inDomain;
  }
}
