/**
 * adaptivePace: a domain's pace learned from its site's response times and
 * errors, kept with its queue in Redis, so every worker follows one pace.
 * Judged from the fixture site's own arrival log (a slower pace shows as
 * longer gaps, a lower bound no load can break) and from the queue's pace
 * in force at the end, read from Redis.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ServerResponse } from 'node:http';
import { runCrawl } from '../../src/crawl/run.js';
import { validateSeed } from '../../src/crawl/seed/seed.js';
import { FairQueue } from '../../src/queue/index.js';
import { html, requestTimes, smallestGap, type Handler, type RecordedRequest } from '../helpers/web.js';
import { useCrawlWorld } from '../helpers/world.js';

const world = useCrawlWorld('adaptive');
const PAGES = 40;
const RATE = 10;

/** Page requests (robots.txt and the index left out), in arrival order. */
const pagesOf = (site: string): RecordedRequest[] => world.web.of(site).filter((r) => /^\/p\d+$/.test(r.path)).sort((a, b) => a.at - b.at);

/** The gaps between consecutive arrivals, widened by the earlier stamp's lag (what the site can vouch for). */
const gaps = (reqs: RecordedRequest[]): number[] => reqs.slice(1).map((r, i) => r.at - (reqs[i] as RecordedRequest).at + (reqs[i] as RecordedRequest).lag);

/** A site whose index links PAGES pages, each answered by `answer(n)` for the n-th page request (1-based). */
async function site(name: string, answer: (n: number, res: ServerResponse) => void): Promise<{ key: string; origin: string }> {
  let n = 0;
  const page: Handler = (_req, res) => answer(++n, res);
  const routes: Record<string, Handler | string> = { '/': html(Array.from({ length: PAGES }, (_, i) => `<a href="/p${i + 1}">${i + 1}</a>`).join(' ')) };
  for (let i = 1; i <= PAGES; i++) routes[`/p${i}`] = page;
  return world.web.site(name, routes);
}

const ok = (res: ServerResponse): void => {
  res.writeHead(200, { 'content-type': 'text/html' });
  res.end(html('leaf'));
};

async function crawl(arena: string, s: { key: string; origin: string }, workers: number, maxInFlight: number): Promise<void> {
  const seed = validateSeed({
    arena,
    rateLimits: { [s.key]: RATE },
    maxInFlightPerDomain: maxInFlight,
    start: [`${s.origin}/`],
    adaptivePace: { delayFactor: 1.5, maxDelayMs: 10_000 },
    allowPrivateNetworks: true,
  });
  await runCrawl(world.redis, seed, { workers, concurrency: 2, retryBaseMs: 50 });
}

/** The pace in force now for the arena's one crawled domain, read from Redis. */
async function paceNow(arena: string, domain: string): Promise<number | 'unlimited' | undefined> {
  return (await new FairQueue(world.redis).allQueueStats(arena)).find((q) => q.name === domain)?.pace;
}

describe('adaptive pace', () => {
  for (const workers of [1, 4]) {
    it(`a site whose responses slow from 50 ms to 1 s and back: the pace drops within a few requests and recovers to the limit (${workers} worker${workers > 1 ? 's' : ''}, one pace)`, async () => {
      const name = `slowing${workers}`;
      // Pages 9-16 take 1 s; the rest 50 ms.
      const s = await site(name, (n, res) => void setTimeout(() => ok(res), n >= 9 && n <= 16 ? 1000 : 50));
      await crawl(`adaptive-slow-${workers}`, s, workers, 2);
      const reqs = pagesOf(name);
      assert.equal(reqs.length, PAGES);
      // Never faster than the limit.
      assert.ok(smallestGap(reqs) >= 1000 / RATE, `${smallestGap(reqs).toFixed(1)} ms between two requests at ${RATE}/s`);
      // From the 4th slow response on, the pace is 1.5 × the smoothed response time (over 770 ms):
      // at least 1 s between arrivals, where 2 in flight of 1 s would come every 500 ms.
      const slowGaps = gaps(reqs.slice(12, 17));
      assert.ok(
        slowGaps.every((g) => g >= 1000),
        `gaps after the 4th slow response: ${slowGaps.map((g) => g.toFixed(0)).join(', ')} ms: ${requestTimes(reqs.slice(8, 18), reqs[0]?.at ?? 0)}`,
      );
      // Recovered: after 24 fast responses the pace in force is the limit again.
      assert.equal(await paceNow(`adaptive-slow-${workers}`, s.key), RATE);
    });
  }

  it('a site answering 503 to every other request is slowed until the errors stop, then recovers to the limit', async () => {
    const name = 'flaky';
    // Page requests 1-10 alternate 503 and 200 (the 503s are retried); then every one is 200.
    const s = await site(name, (n, res) => {
      if (n <= 10 && n % 2 === 1) {
        res.writeHead(503, { 'content-type': 'text/plain' });
        res.end('busy');
      } else ok(res);
    });
    await crawl('adaptive-503', s, 2, 1);
    const reqs = pagesOf(name);
    assert.equal(reqs.length, PAGES + 5, 'every page, and the five 503s retried');
    assert.ok(smallestGap(reqs) >= 1000 / RATE);
    // Each error doubles the interval and each success takes a quarter off: after the
    // 4th error (request 7) it is 100 × 1.5³ × 2 = 675 ms; no gap from there to the 5th error is shorter than 500 ms.
    const errorGaps = gaps(reqs.slice(7, 10));
    assert.ok(errorGaps.every((g) => g >= 500), `gaps while errors go on: ${errorGaps.map((g) => g.toFixed(0)).join(', ')} ms: ${requestTimes(reqs.slice(0, 12), reqs[0]?.at ?? 0)}`);
    assert.equal(await paceNow('adaptive-503', s.key), RATE, 'back at the limit once errors stopped');
  });
});
