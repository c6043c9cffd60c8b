/**
 * What a scrape may cost: Redis is read for the arena's per-domain gauges
 * at most once per `redisEveryMs` (scrapes in between get that read), and
 * only the `maxDomains` domains with most URLs queued (by default; fewer
 * when asked) and at most `maxNamedDomains` domains named by the operator
 * get a series: a million-domain arena is not a million series a scrape,
 * nor a read of a million queues (the backlog index finds the biggest). The
 * server gives a client `requestMs` to send its request and a kept-alive
 * one `idleMs` between requests.
 */
export const METRICS_LIMITS = { redisEveryMs: 5000, maxDomains: 500, maxNamedDomains: 500, requestMs: 10_000, idleMs: 5000, maxConnections: 32 } as const;

/** Which domains get per-domain series: the `top` with most URLs queued (0..maxDomains) and those `named` (always, while their queue exists). */
export interface MetricsDomains {
  top?: number;
  named?: readonly string[];
}
