import { DomainMatcher, parseDomainKey, type DomainKey, compileUrlPattern, type UrlPattern } from '../urls/index.js';
import type { Seed } from '../seed/index.js';

export type ScopeDecision = { ok: true; domain: string } | { ok: false; reason: 'out-of-scope' | 'excluded' | 'not-included' };

/**
 * Which URLs a crawl follows and which queue (domain key) each goes to:
 * inside a rateLimits domain, matching an include pattern (when there are
 * any) and no exclude pattern.
 */
export class Scope {
  private readonly matcher: DomainMatcher;
  private readonly include: UrlPattern[];
  private readonly exclude: UrlPattern[];

  constructor(seed: Pick<Seed, 'rateLimits' | 'include' | 'exclude'>) {
    const keys = Object.keys(seed.rateLimits).map((k) => parseDomainKey(k) as DomainKey);
    this.matcher = new DomainMatcher(keys);
    this.include = seed.include.map(compileUrlPattern);
    this.exclude = seed.exclude.map(compileUrlPattern);
  }

  /** The domain key (queue) of a normalized URL, ignoring include/exclude; null when outside every domain. */
  domainOf(url: string): string | null {
    return this.matcher.match(new URL(url))?.key ?? null;
  }

  /** Inside a crawl domain, include/exclude not asked (they are for pages: a sitemap's URL passes on its domain alone). */
  decideDomain(url: string, parsed: URL = new URL(url)): ScopeDecision {
    const key = this.matcher.match(parsed);
    return key ? { ok: true, domain: key.key } : { ok: false, reason: 'out-of-scope' };
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
