/**
 * Crawling outward (seed otherDomains): a web of over a thousand host names
 * on eight loopback addresses, reached from ten seeded sites. Judged from
 * the servers' own arrival logs: every reachable page fetched once, no host
 * above its rate, maxDomains and maxPagesPerDomain exact.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import { runCrawl } from '../../src/crawl/run.js';
import { validateSeed } from '../../src/crawl/seed/seed.js';
import { FairQueue } from '../../src/queue/index.js';
import { HostWeb } from '../helpers/host-web.js';
import { startRedis, type RedisServer } from '../helpers/redis.js';
import { closestPair, html, requestTimes } from '../helpers/web.js';
import { assertPolite, cappedCrawl, HOSTS, name, page, reachable, SEEDS } from '../helpers/outward-web.js';
import { readJsonl } from '../helpers/world.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

let server: RedisServer;
let redis: Redis;
let dir: string;
before(async () => {
  server = await startRedis();
  redis = server.client();
  dir = await mkdtemp(join(tmpdir(), 'weir-outward-'));
});
after(async () => {
  await server.destroy();
  await rm(dir, { recursive: true, force: true });
});

describe('crawling outward', () => {
  it('from 10 seeded sites over 1,040 hosts on 8 addresses: every reachable page once, each new host created once with the default limits and never above its rate', async () => {
    const web = await HostWeb.start({ names: Array.from({ length: HOSTS }, (_, i) => name(i)), addresses: 8, page });
    try {
      const seed = validateSeed({
        arena: 'outward',
        rateLimits: Object.fromEntries(Array.from({ length: SEEDS }, (_, i) => [name(i), 10])),
        maxInFlightPerDomain: 1,
        start: Array.from({ length: SEEDS }, (_, i) => `${web.origin(name(i))}/`),
        otherDomains: { key: 'host', rate: 10, maxInFlight: 1, maxDomains: 5000 },
        allowPrivateNetworks: true,
      });
      const out = join(dir, 'outward.jsonl');
      const result = await runCrawl(redis, seed, { workers: 2, concurrency: 16, lookup: web.lookup(), out });
      const want = reachable();
      assert.equal(want.size, HOSTS, 'the fixture reaches every site');
      for (const i of want) {
        const paths = web.pages(name(i)).map((a) => a.path).sort();
        assert.deepEqual(paths, ['/', '/a', '/b'], `${name(i)}: each page fetched once`);
        assert.equal(web.arrivals.get(name(i))?.filter((a) => a.path === '/robots.txt').length, 1, `${name(i)}: robots.txt read once`);
      }
      assertPolite(web, 100);
      const lines = await readJsonl(out);
      assert.equal(lines.length, HOSTS * 3);
      assert.equal(new Set(lines.map((l) => l.url)).size, HOSTS * 3, 'one line per page');
      // One queue per host: the ten seeded keys, and a created one (host:port) for each other host, at the default limits.
      const queues = await new FairQueue(redis).allQueueStats('outward');
      assert.equal(queues.length, HOSTS);
      const created = queues.filter((q) => !/^site\d+\.test$/.test(q.name));
      assert.equal(created.length, HOSTS - SEEDS);
      assert.ok(created.every((q) => q.name.endsWith(`:${web.port}`) && q.rate === 10 && q.maxInFlight === 1));
      assert.equal(result.stats.totals.newDomains, HOSTS - SEEDS, 'each new domain counted once');
    } finally {
      await web.close();
    }
  });

  it('maxDomains and maxPagesPerDomain are exact across workers: 25 new domains, 2 pages each, the rest dropped and counted', async () => {
    await cappedCrawl(redis, 'outward-capped');
  });

  it('keyed by registrable domain: www.b.test, b.test and shop.b.test are one queue, and share one pace', async () => {
    const names = ['a.test', 'b.test', 'www.b.test', 'shop.b.test'];
    const web = await HostWeb.start({
      names,
      addresses: 2,
      page: (host, path, origin) => {
        if (host === 'a.test' && path === '/') return html(['www.b.test', 'b.test', 'shop.b.test'].flatMap((n) => [1, 2].map((k) => `<a href="${origin(n)}/p${k}">x</a>`)).join(' '));
        return path === '/robots.txt' ? null : html('leaf');
      },
    });
    try {
      const seed = validateSeed({
        arena: 'outward-registrable',
        rateLimits: { 'a.test': 'unlimited' },
        start: [`${web.origin('a.test')}/`],
        otherDomains: { key: 'registrable', rate: 5, maxInFlight: 1 },
        allowPrivateNetworks: true,
      });
      await runCrawl(redis, seed, { workers: 2, concurrency: 4, lookup: web.lookup() });
      const queues = (await new FairQueue(redis).allQueueStats('outward-registrable')).map((q) => q.name).sort();
      assert.deepEqual(queues, ['a.test', `b.test:${web.port}`]);
      // Three hosts' robots.txt and six pages, in one pace of 5/s as the three hosts saw it together.
      const together = ['b.test', 'www.b.test', 'shop.b.test'].flatMap((n) => web.arrivals.get(n) ?? []);
      assert.equal(together.length, 9);
      const { gap, around } = closestPair(together);
      assert.ok(gap >= 200, `b.test's hosts: two requests ${gap.toFixed(1)} ms apart at 5/s: ${requestTimes(around, around[0]?.at ?? 0)}`);
    } finally {
      await web.close();
    }
  });
});
