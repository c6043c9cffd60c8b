/**
 * robots.txt as the site sees it: each redirect hop of robots.txt in a slot
 * of its own; one fetch per origin however slow, the lock kept by its owner
 * only (compare-and-delete, renewed while the fetch runs); a worker killed
 * mid-fetch holds the domain up for seconds, not a minute; and the domain's
 * pause and lock are let go whatever fails at the end.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { crawlStats } from '../../src/crawl/counters/stats.js';
import { kickoff } from '../../src/crawl/kickoff.js';
import { crawlKeys } from '../../src/crawl/store/index.js';
import { ownedLock } from '../../src/crawl/store/owned-lock.js';
import { ROBOTS } from '../../src/crawl/robots/cache.js';
import { RobotsHold } from '../../src/crawl/robots/slot.js';
import type { RobotsGate } from '../../src/crawl/robots/gate.js';
import { storableSeed, validateSeed } from '../../src/crawl/seed/seed.js';
import { CrawlWorker } from '../../src/crawl/worker.js';
import { FairQueue } from '../../src/queue/index.js';
import { cliBundle } from '../helpers/cli-bundle.js';
import { html, requestTimes, smallestGap, type Handler } from '../helpers/web.js';
import { useCrawlWorld } from '../helpers/world.js';

const world = useCrawlWorld('robots-pace');

const moved = (to: string): Handler => (_req, res) => {
  res.writeHead(301, { location: to });
  res.end();
};
const later = (ms: number, body: string): Handler => (_req, res) => {
  setTimeout(() => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(body);
  }, ms);
};
const pages = html('<a href="/a">a</a> <a href="/b">b</a> <a href="/c">c</a>');

describe('robots.txt and the pace', () => {
  it('a robots.txt that redirects twice within its domain: every hop in a slot of its own', async () => {
    const site = await world.web.site('H', { '/robots.txt': moved('/robots-1.txt'), '/robots-1.txt': moved('/robots-2.txt'), '/robots-2.txt': 'User-agent: *\nAllow: /\n', '/': pages }, (_q, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(html('leaf'));
    });
    const seed = validateSeed({ arena: 'hops', rateLimits: { [site.key]: 5 }, start: [`${site.origin}/`], allowPrivateNetworks: true });
    await kickoff(world.redis, seed);
    await new CrawlWorker(world.redis, seed, { concurrency: 2, exitWhenDone: true }).run();
    const reqs = world.web.of('H');
    assert.deepEqual(reqs.slice(0, 3).map((r) => r.path), ['/robots.txt', '/robots-1.txt', '/robots-2.txt']);
    assert.equal(reqs.length, 7, 'three hops of robots.txt, four pages');
    assert.ok(smallestGap(reqs) >= 200, `${smallestGap(reqs).toFixed(1)} ms at 5/s: ${requestTimes(reqs, reqs[0]?.at ?? 0)}`);
  });

  it('a robots.txt slower than the lock: fetched once by two workers (the lock renewed while it runs)', async () => {
    const slowMs = ROBOTS.lockMs + 2000;
    const site = await world.web.site('S', { '/robots.txt': later(slowMs, 'User-agent: *\nAllow: /\n'), '/': pages }, (_q, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(html('leaf'));
    });
    const seed = validateSeed({ arena: 'slowrobots', rateLimits: { [site.key]: 'unlimited' }, start: [`${site.origin}/`, `${site.origin}/a`, `${site.origin}/b`], allowPrivateNetworks: true, requestTimeoutMs: slowMs + 5000 });
    await kickoff(world.redis, seed);
    await Promise.all([0, 1].map(() => new CrawlWorker(world.redis, seed, { concurrency: 2, exitWhenDone: true }).run()));
    const reqs = world.web.of('S');
    assert.equal(reqs.filter((r) => r.path === '/robots.txt').length, 1, 'robots.txt fetched once');
    assert.equal(reqs.filter((r) => r.path !== '/robots.txt').length, 4, 'every page');
  });

  it("the lock is only ever freed or renewed by its owner (a slow owner can't free another's)", async () => {
    const key = 'weir:{locktest}:robotslock:http://x';
    assert.equal(await ownedLock.take(world.redis, key, 'A', 60_000), true);
    assert.equal(await ownedLock.take(world.redis, key, 'B', 60_000), false, 'held');
    // A's lock lapses (A stalled); B takes it; A, waking, frees and renews nothing of B's.
    await world.redis.del(key);
    assert.equal(await ownedLock.take(world.redis, key, 'B', 60_000), true);
    assert.equal(await ownedLock.release(world.redis, key, 'A'), false);
    assert.equal(await ownedLock.renew(world.redis, key, 'A', 60_000), false);
    assert.equal(await world.redis.get(key), 'B');
    assert.equal(await ownedLock.release(world.redis, key, 'B'), true);
    assert.equal(await world.redis.exists(key), 0);
  });

  it('a worker SIGKILLed while it fetches robots.txt holds the domain up for seconds, not a minute', async () => {
    let hang = true;
    const robots: Handler = (_req, res) => {
      // The first fetch never answers (its worker is killed); the next does.
      if (hang) return;
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('User-agent: *\nAllow: /\n');
    };
    const site = await world.web.site('K', { '/robots.txt': robots, '/': pages }, (_q, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(html('leaf'));
    });
    const seed = validateSeed({ arena: 'killrobots', rateLimits: { [site.key]: 10 }, start: [`${site.origin}/`], allowPrivateNetworks: true });
    const seedPath = join(world.dir, 'killrobots.json');
    await writeFile(seedPath, JSON.stringify(storableSeed(seed)));
    await kickoff(world.redis, seed);
    const doomed = spawn(process.execPath, [cliBundle(), 'worker', seedPath, '--redis', world.server.url, '--concurrency', '2', '--lease-ms', '2000'], { stdio: 'ignore', env: { ...process.env, WEIR_LOG_LEVEL: 'warn' } });
    const deadline = Date.now() + 20_000;
    while (!world.web.of('K').some((r) => r.path === '/robots.txt')) {
      assert.ok(Date.now() < deadline, 'the worker never asked for robots.txt');
      await new Promise((r) => setTimeout(r, 20));
    }
    doomed.kill('SIGKILL');
    const killedAt = performance.now();
    hang = false;
    await new CrawlWorker(world.redis, seed, { concurrency: 2, exitWhenDone: true, leaseMs: 2000 }).run();
    const again = world.web.of('K').filter((r) => r.path === '/robots.txt')[1];
    assert.ok(again, 'robots.txt fetched again by the live worker');
    const heldMs = again.at - killedAt;
    assert.ok(heldMs < ROBOTS.lockMs + 3000, `the domain was held ${(heldMs / 1000).toFixed(1)} s after the kill (lock and pause ${ROBOTS.lockMs / 1000} s)`);
    assert.equal(world.web.of('K').filter((r) => r.path !== '/robots.txt').length, 4, 'then every page');
  });

  it('a Crawl-delay stands through a second kickoff, and goes when robots.txt, read again, no longer asks for it', async () => {
    let robots = 'User-agent: *\nCrawl-delay: 0.5\n';
    const site = await world.web.site('W', {
      '/robots.txt': (_q, res) => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end(robots);
      },
      '/': pages,
    }, (_q, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(html('leaf'));
    });
    const seedOf = (start: string): ReturnType<typeof validateSeed> => validateSeed({ arena: 'delaygone', rateLimits: { [site.key]: 20 }, start: [`${site.origin}${start}`], allowPrivateNetworks: true });
    const rateOf = async (): Promise<unknown> => (await crawlStats(world.redis, 'delaygone')).domains.find((d) => d.domain === site.key)?.rateLimit;
    await kickoff(world.redis, seedOf('/'));
    await new CrawlWorker(world.redis, seedOf('/'), { concurrency: 2, exitWhenDone: true }).run();
    const first = world.web.of('W');
    assert.ok(smallestGap(first) >= 500, `${smallestGap(first).toFixed(1)} ms under Crawl-delay 0.5: ${requestTimes(first, first[0]?.at ?? 0)}`);
    assert.equal(await rateOf(), 2);
    // The seed's limits set again: robots.txt is cached for a day, and its delay still stands.
    await kickoff(world.redis, seedOf('/'));
    assert.equal(await rateOf(), 2);
    // A day later (its cache gone), robots.txt is read again and asks for no delay: the seed's 20/s again.
    robots = 'User-agent: *\nAllow: /\n';
    await world.redis.del(crawlKeys('delaygone', new FairQueue(world.redis)).robots(site.origin));
    await kickoff(world.redis, seedOf('/later'));
    await new CrawlWorker(world.redis, seedOf('/later'), { concurrency: 2, exitWhenDone: true }).run();
    assert.equal(world.web.of('W').filter((r) => r.path === '/robots.txt').length, 2);
    assert.equal(await rateOf(), 20);
  });

  it("the end of a robots.txt fetch frees the lock even when moving the domain's pause fails", async () => {
    const freed: string[] = [];
    const queue = {
      pause: () => Promise.resolve(1_000),
      repause: () => Promise.reject(new Error('Redis went away')),
    } as unknown as FairQueue;
    const gate = { renew: () => Promise.resolve(true), done: (origin: string) => (freed.push(origin), Promise.resolve()) } as unknown as RobotsGate;
    const hold = await RobotsHold.start(queue, gate, 'arena', 'x.test', 'http://x.test');
    await assert.rejects(hold.end(0), /Redis went away/);
    assert.deepEqual(freed, ['http://x.test']);
  });
});
