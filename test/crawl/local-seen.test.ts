/** The local filter in a crawl: navigation links repeated on every page go to Redis once per worker. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { kickoff } from '../../src/crawl/kickoff.js';
import { crawlKeys } from '../../src/crawl/keys.js';
import { runWorker } from '../../src/crawl/run.js';
import { validateSeed } from '../../src/crawl/seed.js';
import { FairQueue } from '../../src/queue/index.js';
import { html } from '../helpers/web.js';
import { useCrawlWorld } from '../helpers/world.js';

const world = useCrawlWorld('localseen');

describe('local seen filter', () => {
  it('a site whose 30 pages all link to all 30: every page fetched once, 870 of the 900 links never sent to Redis', async () => {
    const N = 30;
    const nav = Array.from({ length: N }, (_, i) => `<a href="/p/${i}">${i}</a>`).join(' ');
    const site = await world.web.site('N', { '/robots.txt': 'User-agent: *\nAllow: /\n' }, (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(html(nav));
    });
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
});
