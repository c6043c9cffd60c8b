/**
 * The outward-crawl fixture (test/crawl/outward.test.ts, and on a Cluster
 * test/cluster/outward.test.ts): 1,040 sites on 8 loopback addresses, each
 * home page linking two sites further out, and the checks of a crawl of it.
 */
import assert from 'node:assert/strict';
import type { RedisClient } from '../../src/queue/index.js';
import { runCrawl } from '../../src/crawl/run.js';
import { validateSeed } from '../../src/crawl/seed/seed.js';
import { FairQueue } from '../../src/queue/index.js';
import { HostWeb } from './host-web.js';
import { closestPair, html, requestTimes } from './web.js';

export const HOSTS = 1040;
export const SEEDS = 10;
export const name = (i: number): string => `site${i}.test`;
/** Site i's home page links two sites further out: from the ten seeds every site is reached within a few hops. */
export const outLinks = (i: number): number[] => [(2 * i + SEEDS) % HOSTS, (2 * i + SEEDS + 1) % HOSTS];

export function page(host: string, path: string, origin: (n: string) => string): string | null {
  const i = Number(/^site(\d+)\.test$/.exec(host)?.[1]);
  if (path === '/') return html(`<a href="/a">a</a> <a href="/b">b</a> ${outLinks(i).map((j) => `<a href="${origin(name(j))}/">${j}</a>`).join(' ')}`);
  if (path === '/a') return html('<a href="/b">b</a> <a href="/">home</a>');
  if (path === '/b') return html('leaf');
  return null;
}

/** The sites reachable from the seeds by following home-page links (all of them, here). */
export function reachable(): Set<number> {
  const seen = new Set<number>();
  const todo = Array.from({ length: SEEDS }, (_, i) => i);
  for (let i = todo.pop(); i !== undefined; i = todo.pop()) {
    if (seen.has(i)) continue;
    seen.add(i);
    todo.push(...outLinks(i));
  }
  return seen;
}

/** Each host's closest pair of arrivals must be at least 1/rate apart, as the host saw them. */
export function assertPolite(web: HostWeb, intervalMs: number): void {
  for (const [host, log] of web.arrivals) {
    const { gap, around } = closestPair(log);
    assert.ok(gap >= intervalMs, `${host}: two requests ${gap.toFixed(1)} ms apart at an interval of ${intervalMs} ms: ${requestTimes(around, around[0]?.at ?? 0)}`);
  }
}

/** Each server's closest pair of arrivals (all its hosts together) must be at least `intervalMs(address)` apart, by its own log. */
export function assertPoliteByAddress(web: HostWeb, intervalMs: (address: string) => number): void {
  for (const [address, log] of web.byAddress) {
    const { gap, around } = closestPair(log);
    const want = intervalMs(address);
    assert.ok(gap >= want, `server ${address}: two requests ${gap.toFixed(1)} ms apart at an interval of ${want} ms: ${requestTimes(around, around[0]?.at ?? 0)}`);
  }
}

/**
 * A crawl of the fixture with maxDomains 25 and maxPagesPerDomain 2 by 3
 * in-process workers on `redis` (one node or a Cluster), checked from the
 * servers' logs: exactly 25 new domains, exactly 2 pages of each domain.
 * With perServer, every server (of the 8 addresses) is also at most at the
 * sites' rate, all its sites together.
 */
export async function cappedCrawl(redis: RedisClient, arena: string, options: { perServer?: boolean } = {}): Promise<void> {
const web = await HostWeb.start({ names: Array.from({ length: HOSTS }, (_, i) => name(i)), addresses: 8, page });
    try {
      const seed = validateSeed({
        arena,
        rateLimits: Object.fromEntries(Array.from({ length: SEEDS }, (_, i) => [name(i), 20])),
        maxInFlightPerDomain: 1,
        start: Array.from({ length: SEEDS }, (_, i) => `${web.origin(name(i))}/`),
        otherDomains: { key: 'host', rate: 20, maxInFlight: 1, maxDomains: 25 },
        maxPagesPerDomain: 2,
        allowPrivateNetworks: true,
        perServer: options.perServer === true,
      });
      const result = await runCrawl(redis, seed, { workers: 3, concurrency: 8, lookup: web.lookup() });
      const fetched = [...web.arrivals.keys()].filter((h) => web.pages(h).length > 0);
      const seeded = fetched.filter((h) => Number(/\d+/.exec(h)?.[0]) < SEEDS);
      assert.equal(seeded.length, SEEDS);
      assert.equal(fetched.length - seeded.length, 25, 'exactly maxDomains new domains fetched');
      for (const h of fetched) {
        const paths = web.pages(h).map((a) => a.path);
        assert.equal(paths.length, 2, `${h}: exactly maxPagesPerDomain pages (${paths.join(' ')})`);
        assert.equal(new Set(paths).size, 2, `${h}: no page twice`);
        assert.ok(paths.includes('/'), `${h}: its home page among them`);
      }
      assertPolite(web, 50);
      if (options.perServer) {
        assertPoliteByAddress(web, () => 50);
        const queues = (await new FairQueue(redis).allQueueStats(arena)).map((q) => q.name);
        assert.ok(queues.length > 0 && queues.length <= 8 && queues.every((q) => /^@127\.0\.0\.\d+$/.test(q)), `one queue per server: ${queues.join(' ')}`);
      }
      const t = result.stats.totals;
      assert.equal(t.pages, (SEEDS + 25) * 2);
      assert.equal(t.newDomains, 25);
      assert.ok(t.domainCapDrops > 0, 'links to domains past the cap were dropped and counted');
      assert.ok(t.quotaSkips > 0, 'URLs past a domain quota were skipped and counted');
      assert.equal(await redis.scard(new FairQueue(redis).key(arena, 'otherdomains')), 25);
    } finally {
      await web.close();
    }
  }
