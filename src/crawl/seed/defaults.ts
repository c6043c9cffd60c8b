/** The seed's documented defaults (docs/seed.md states each). */
export const SEED_DEFAULTS = {
  userAgent: 'weir/0.1 (+https://www.npmjs.com/package/weir)',
  maxInFlightPerDomain: 2,
  allowPrivateNetworks: false,
  respectNofollow: true,
  bloom: { expectedUrls: 10_000_000, falsePositiveRate: 0.000001 },
  /** Whole-request deadline: connect, headers and body together. */
  requestTimeoutMs: 30_000,
  /** Most bytes of a body, counted after decompression. */
  maxBodyBytes: 10 * 1024 * 1024,
  /** Redirect hops followed from one URL (each hop is a new queued URL). */
  maxRedirects: 10,
  /** Sitemaps: true reads those robots.txt lists; a list adds these; false reads none. */
  sitemaps: true,
  /**
   * Sitemaps queued from robots.txt lines and index files, the crawl's
   * whole budget for them (each index of 3 levels may list 50,000 more).
   */
  maxSitemaps: 1000,
  /** Links to domains rateLimits does not name: followed with these when otherDomains is 'follow' or a mapping. */
  otherDomains: { key: 'registrable', rate: 1, maxInFlight: 1, maxDomains: 1000 },
  /** A pace learned from each site (adaptivePace: true, or a mapping of these). */
  adaptivePace: { delayFactor: 2, maxDelayMs: 30_000 },
  /** Revisits (revisit: true, or a mapping of these): intervals in seconds. */
  revisit: { minIntervalSeconds: 3600, initialIntervalSeconds: 86_400, maxIntervalSeconds: 30 * 86_400, maxUrls: 1_000_000, goneAfter: 3 },
} as const;
