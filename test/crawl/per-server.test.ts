/**
 * Politeness per server (seed perServer): the sites one address holds share
 * one limit, their strictest. Judged by each server's own log of what
 * reached it (HostWeb.byAddress: the address a connection came in on).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import { runCrawl } from '../../src/crawl/run.js';
import { validateSeed } from '../../src/crawl/seed/seed.js';
import { guardedLookup } from '../../src/crawl/fetch/index.js';
import { FairQueue } from '../../src/queue/index.js';
import { HostWeb } from '../helpers/host-web.js';
import { startRedis, type RedisServer } from '../helpers/redis.js';
import { closestPair, html, requestTimes } from '../helpers/web.js';
import { assertPoliteByAddress, cappedCrawl, HOSTS, name, page, reachable, SEEDS } from '../helpers/outward-web.js';

let server: RedisServer;
let redis: Redis;
before(async () => {
  server = await startRedis();
  redis = server.client();
});
after(async () => {
  await server.destroy();
});

describe('politeness per server', () => {
  it('1,040 hosts on 8 addresses: every page once, each server at its strictest site\'s rate by its own log, one queue per server', async () => {
    const web = await HostWeb.start({ names: Array.from({ length: HOSTS }, (_, i) => name(i)), addresses: 8, page });
    try {
      // site0 (on 127.0.0.2) asks for 20/s; every other site allows 25/s.
      const seed = validateSeed({
        arena: 'per-server',
        rateLimits: Object.fromEntries(Array.from({ length: SEEDS }, (_, i) => [name(i), i === 0 ? 20 : 25])),
        maxInFlightPerDomain: 1,
        start: Array.from({ length: SEEDS }, (_, i) => `${web.origin(name(i))}/`),
        otherDomains: { key: 'host', rate: 25, maxInFlight: 1, maxDomains: 5000 },
        allowPrivateNetworks: true,
        perServer: true,
      });
      const result = await runCrawl(redis, seed, { workers: 2, concurrency: 16, lookup: web.lookup() });
      for (const i of reachable()) {
        assert.deepEqual(web.pages(name(i)).map((a) => a.path).sort(), ['/', '/a', '/b'], `${name(i)}: each page fetched once`);
      }
      assert.equal(web.byAddress.size, 8, 'all eight servers reached');
      assertPoliteByAddress(web, (address) => (address === '127.0.0.2' ? 50 : 40));
      const queues = await new FairQueue(redis).allQueueStats('per-server');
      assert.deepEqual(
        queues.map((q) => [q.name, q.rate, q.maxInFlight]).sort(),
        Array.from({ length: 8 }, (_, a) => [`@127.0.0.${2 + a}`, a === 0 ? 20 : 25, 1]),
        'one queue per server, at the lowest rate of its sites',
      );
      assert.equal(result.stats.totals.pages, HOSTS * 3);
      assert.equal(result.stats.totals.addressMoves, 0);
    } finally {
      await web.close();
    }
  });

  it('maxDomains and maxPagesPerDomain stay exact per domain when domains share servers', async () => {
    await cappedCrawl(redis, 'per-server-capped', { perServer: true });
  });

  it("one site's Crawl-delay slows its whole server: the server's queue takes the longer interval, every site on it keeps it", async () => {
    const web = await HostWeb.start({
      names: ['slow.test', 'quick.test'],
      addresses: 1,
      page: (host, path) => {
        if (path === '/robots.txt') return host === 'slow.test' ? 'User-agent: *\nCrawl-delay: 0.25\n' : null;
        if (path === '/') return html([1, 2, 3, 4].map((k) => `<a href="/p${k}">p${k}</a>`).join(' '));
        return html('leaf');
      },
    });
    try {
      const seed = validateSeed({
        arena: 'per-server-delay',
        rateLimits: { 'slow.test': 20, 'quick.test': 20 },
        maxInFlightPerDomain: 1,
        start: [`${web.origin('slow.test')}/`, `${web.origin('quick.test')}/`],
        allowPrivateNetworks: true,
        perServer: true,
      });
      await runCrawl(redis, seed, { workers: 2, concurrency: 4, lookup: web.lookup() });
      assert.equal(web.pages('slow.test').length + web.pages('quick.test').length, 10);
      const log = [...(web.byAddress.get('127.0.0.2') ?? [])].sort((a, b) => a.at - b.at);
      const read = log.findIndex((a, i) => a.path === '/robots.txt' && web.arrivals.get('slow.test')?.includes(log[i] as (typeof log)[number]));
      assert.ok(read >= 0);
      const since = log.slice(read);
      assert.ok(since.length >= 5, `${since.length} requests after the Crawl-delay was read`);
      const { gap, around } = closestPair(since);
      assert.ok(gap >= 250, `the server: two requests ${gap.toFixed(1)} ms apart after a Crawl-delay of 0.25 s: ${requestTimes(around, around[0]?.at ?? 0)}`);
      const [q] = await new FairQueue(redis).allQueueStats('per-server-delay');
      assert.deepEqual([q?.name, q?.rate], ['@127.0.0.2', 4]);
    } finally {
      await web.close();
    }
  });

  it('a host that moves to another address mid-crawl: its URLs follow it to the new server, each server kept to its rate, nothing lost', async () => {
    const PAGES = 40;
    const web = await HostWeb.start({
      names: ['moving.test'],
      addresses: 2,
      page: (_host, path) => {
        if (path === '/') return html(Array.from({ length: PAGES }, (_, k) => `<a href="/p${k}">p${k}</a>`).join(' '));
        return path === '/robots.txt' ? null : html('leaf');
      },
    });
    try {
      // The name resolves to 127.0.0.2 until ten pages have arrived there, then to 127.0.0.3.
      const lookup = guardedLookup(true, (_hostname, _options, cb) => {
        const moved = (web.byAddress.get('127.0.0.2')?.length ?? 0) >= 10;
        cb(null, [{ address: moved ? '127.0.0.3' : '127.0.0.2', family: 4 }]);
      });
      const seed = validateSeed({
        arena: 'per-server-move',
        rateLimits: { 'moving.test': 10 },
        maxInFlightPerDomain: 1,
        start: [`${web.origin('moving.test')}/`],
        allowPrivateNetworks: true,
        perServer: true,
      });
      const result = await runCrawl(redis, seed, { workers: 2, concurrency: 4, lookup, addressTtlMs: 300 });
      const paths = web.pages('moving.test').map((a) => a.path);
      assert.equal(paths.length, PAGES + 1, 'every page fetched');
      assert.equal(new Set(paths).size, PAGES + 1, 'none twice');
      const atNew = web.byAddress.get('127.0.0.3')?.length ?? 0;
      assert.ok(atNew >= PAGES / 2, `most pages went to the new server (${atNew})`);
      assertPoliteByAddress(web, () => 100);
      assert.ok(result.stats.totals.addressMoves > 0, 'queued URLs moved to the new server and counted');
      const queues = (await new FairQueue(redis).allQueueStats('per-server-move')).map((q) => [q.name, q.rate, q.queued]).sort();
      assert.deepEqual(queues, [['@127.0.0.2', 10, 0], ['@127.0.0.3', 10, 0]]);
    } finally {
      await web.close();
    }
  });
});
