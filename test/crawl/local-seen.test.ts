/** The local filter in a crawl: navigation links repeated on every page go to Redis once per worker. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { bloomParams, legacyBloomParams } from '../../src/crawl/dedupe/bloom.js';
import { kickoff } from '../../src/crawl/kickoff.js';
import { crawlKeys } from '../../src/crawl/store/keys.js';
import { runWorker } from '../../src/crawl/run.js';
import { validateSeed } from '../../src/crawl/seed/seed.js';
import { FairQueue } from '../../src/queue/index.js';
import { html } from '../helpers/web.js';
import { useCrawlWorld } from '../helpers/world.js';

const world = useCrawlWorld('localseen');

/** A site of n pages, /p/0 .. /p/(n-1), each linking to all n, answering after `delayMs`. */
function navSite(name: string, n: number, delayMs = 0): ReturnType<typeof world.web.site> {
  const nav = Array.from({ length: n }, (_, i) => `<a href="/p/${i}">${i}</a>`).join(' ');
  return world.web.site(name, { '/robots.txt': 'User-agent: *\nAllow: /\n' }, (_req, res) => {
    setTimeout(() => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(html(nav));
    }, delayMs);
  });
}

describe('local seen filter', () => {
  it('a site whose 30 pages all link to all 30: every page fetched once, 870 of the 900 links never sent to Redis', async () => {
    const N = 30;
    const site = await navSite('N', N);
    const seed = validateSeed({ arena: 'localseen', rateLimits: { [site.key]: 'unlimited' }, start: [`${site.origin}/p/0`], allowPrivateNetworks: true, maxInFlightPerDomain: 1 });
    await kickoff(world.redis, seed);
    const summary = await runWorker(world.redis, seed, { exitWhenDone: true, concurrency: 1 });
    assert.equal(summary.pages, N);
    for (let i = 0; i < N; i++) assert.equal(world.web.fetched('N', `/p/${i}`), 1, `/p/${i}`);
    const stats = await world.redis.hgetall(crawlKeys('localseen', new FairQueue(world.redis)).stats);
    // The first page offers all 30 (one already queued by kickoff); each later page's 30 were all offered before.
    assert.equal(Number(stats['*:localHits']), (N - 1) * N);
    assert.equal(Number(stats['*:dedupeHits']), (N - 1) * N + 1);
    assert.equal(Number(stats['*:enqueued']), N - 1);
  });

  it('pages that finish together offer the links they share once: each URL goes to Redis once per worker', async () => {
    const N = 30;
    // (Slow enough that 8 lanes' pages are in flight, and their links offered, together.)
    const site = await navSite('T', N, 30);
    const arena = 'localseen-together';
    const seed = validateSeed({ arena, rateLimits: { [site.key]: 'unlimited' }, start: Array.from({ length: N }, (_, i) => `${site.origin}/p/${i}`), allowPrivateNetworks: true, maxInFlightPerDomain: 8 });
    await kickoff(world.redis, seed);
    const summary = await runWorker(world.redis, seed, { exitWhenDone: true, concurrency: 8 });
    assert.equal(summary.pages, N);
    const stats = await world.redis.hgetall(crawlKeys(arena, new FairQueue(world.redis)).stats);
    // Every page links all N; each URL offered once (and found seen: kickoff queued them all).
    assert.equal(Number(stats['*:localHits']), N * N - N);
    assert.equal(Number(stats['*:dedupeHits']), N * N);
    assert.equal(Number(stats['*:enqueued'] ?? 0), 0);
  });

  it("a page's links set their Bloom bits in block form (a GETRANGE an item, a SETRANGE a new one), not with BITFIELD: fewer instructions a link", async () => {
    const N = 20;
    const site = await navSite('B', N);
    const arena = 'localseen-blocks';
    const seed = validateSeed({ arena, rateLimits: { [site.key]: 'unlimited' }, start: [`${site.origin}/p/0`], allowPrivateNetworks: true, maxInFlightPerDomain: 1 });
    await kickoff(world.redis, seed);
    const calls = async (cmd: string): Promise<number> => Number(new RegExp(`cmdstat_${cmd}:calls=(\\d+)`).exec(await world.redis.info('commandstats'))?.[1] ?? 0);
    const before = { setrange: await calls('setrange'), bitfield: await calls('bitfield') };
    const summary = await runWorker(world.redis, seed, { exitWhenDone: true, concurrency: 1 });
    assert.equal(summary.pages, N);
    for (let i = 0; i < N; i++) assert.equal(world.web.fetched('B', `/p/${i}`), 1, `/p/${i}`);
    // The N - 1 URLs the first page found new each had its block written once; no bit went through BITFIELD.
    assert.equal((await calls('setrange')) - before.setrange, N - 1);
    assert.equal((await calls('bitfield')) - before.bitfield, 0);
  });

  it('an arena whose bitmap was sized the older way keeps it: kickoff and workers use its numbers, so URLs it holds stay seen', async () => {
    const N = 10;
    const site = await navSite('L', N);
    const arena = 'localseen-legacy';
    const seed = validateSeed({ arena, rateLimits: { [site.key]: 'unlimited' }, start: [`${site.origin}/p/0`], allowPrivateNetworks: true, bloom: { expectedUrls: 10_000, falsePositiveRate: 0.000001 } });
    const legacy = legacyBloomParams(10_000, 0.000001);
    assert.notDeepEqual(legacy, bloomParams(10_000, 0.000001));
    await new FairQueue(world.redis).configureDedupe(arena, legacy);
    assert.deepEqual((await kickoff(world.redis, seed)).bloom, legacy);
    const summary = await runWorker(world.redis, seed, { exitWhenDone: true, concurrency: 1 });
    assert.equal(summary.pages, N);
    for (let i = 0; i < N; i++) assert.equal(world.web.fetched('L', `/p/${i}`), 1, `/p/${i}`);
    // Another bloom setting for the same arena is still refused.
    await assert.rejects(kickoff(world.redis, { ...seed, bloom: { expectedUrls: 20_000, falsePositiveRate: 0.000001 } }), { code: 'WEIR_DEDUPE_MISMATCH' });
  });
});
