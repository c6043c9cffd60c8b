import { DomainMatcher, parseDomainKey, type DomainKey, compileUrlPattern, newDomainKey, type UrlPattern } from '../urls/index.js';
import type { OtherDomains, Seed, SeedRate } from '../seed/index.js';

/** In scope: the domain key (queue) it goes to, and whether that is a domain the seed does not list (otherDomains). */
export type ScopeDecision = { ok: true; domain: string; other: boolean } | { ok: false; reason: 'out-of-scope' | 'excluded' | 'not-included' };

/**
 * Which URLs a crawl follows and which queue (domain key) each goes to:
 * inside a rateLimits domain (or, when the seed follows other domains, any
 * http(s) URL, keyed by otherDomains.key), matching an include pattern
 * (when there are any) and no exclude pattern.
 */
export class Scope {
  private readonly matcher: DomainMatcher;
  private readonly include: UrlPattern[];
  private readonly exclude: UrlPattern[];
  private readonly other: OtherDomains | null;

  private readonly rateLimits: Record<string, SeedRate>;
  private readonly maxInFlightPerDomain: number;

  constructor(seed: Pick<Seed, 'rateLimits' | 'include' | 'exclude'> & Partial<Pick<Seed, 'otherDomains' | 'maxInFlightPerDomain'>>) {
    this.other = seed.otherDomains ?? null;
    this.rateLimits = seed.rateLimits;
    this.maxInFlightPerDomain = seed.maxInFlightPerDomain ?? 0;
    const keys = Object.keys(seed.rateLimits).map((k) => parseDomainKey(k) as DomainKey);
    this.matcher = new DomainMatcher(keys);
    this.include = seed.include.map(compileUrlPattern);
    this.exclude = seed.exclude.map(compileUrlPattern);
  }

  /** The seeded domain key (queue) of a normalized URL, ignoring include/exclude; null when outside every domain the seed lists. */
  domainOf(url: string): string | null {
    return this.matcher.match(new URL(url))?.key ?? null;
  }

  /** The domain key (queue) of a normalized URL, the seed's or a new one, ignoring include/exclude; null when out of scope. */
  queueOf(url: string): string | null {
    const d = this.decideDomain(url);
    return d.ok ? d.domain : null;
  }

  /**
   * The limits a domain's queue is made with: the seed's for the domains it
   * lists, otherDomains' for the others (null when it follows none).
   */
  limitsOf(domain: string): { rate: SeedRate; maxInFlight: number } | null {
    const seeded = Object.hasOwn(this.rateLimits, domain) ? this.rateLimits[domain] : undefined;
    if (seeded !== undefined) return { rate: seeded, maxInFlight: this.maxInFlightPerDomain };
    return this.other && { rate: this.other.rate, maxInFlight: this.other.maxInFlight };
  }

  /** Inside a crawl domain, include/exclude not asked (they are for pages: a sitemap's URL passes on its domain alone). */
  decideDomain(url: string, parsed: URL = new URL(url)): ScopeDecision {
    const key = this.matcher.match(parsed);
    if (key) return { ok: true, domain: key.key, other: false };
    if (this.other) return { ok: true, domain: newDomainKey(parsed, this.other.key), other: true };
    return { ok: false, reason: 'out-of-scope' };
  }

  /** `url` must already be normalized (pass the parsed URL when you have it). */
  decide(url: string, parsed: URL = new URL(url)): ScopeDecision {
    const inDomain = this.decideDomain(url, parsed);
    if (!inDomain.ok) return inDomain;
    if (this.exclude.some((r) => r.test(url))) return { ok: false, reason: 'excluded' };
    if (this.include.length > 0 && !this.include.some((r) => r.test(url))) return { ok: false, reason: 'not-included' };
    return inDomain;
  }
}
