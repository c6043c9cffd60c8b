/**
 * The orchestration every caller shares (src/crawl/run.ts) and the robots
 * gate as a server sees it: real redis-server, real HTTP servers on 127.0.0.1.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { pino, type Logger } from 'pino';
import { crawlKeys } from '../../src/crawl/store/keys.js';
import { kickoff } from '../../src/crawl/kickoff.js';
import { runCrawl, runWorker, storedSeed } from '../../src/crawl/run.js';
import { storableSeed, validateSeed } from '../../src/crawl/seed/seed.js';
import { FairQueue } from '../../src/queue/index.js';
import { stallWatch } from '../helpers/stamps.js';
import { html, smallestGap } from '../helpers/web.js';
import { useCrawlWorld } from '../helpers/world.js';

const world = useCrawlWorld('run');

/** A pino logger whose lines land in `lines`. */
function capture(): { log: Logger; lines: { level: number; msg: string }[] } {
  const lines: { level: number; msg: string }[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l) as { level: number; msg: string });
      done();
    },
  });
  return { log: pino({ level: 'info' }, stream), lines };
}

describe('the stored seed', () => {
  it('a worker whose seed file differs from the stored one warns and crawls with the stored one', async () => {
    const site = await world.web.site('S', { '/robots.txt': 'User-agent: *\nAllow: /\n', '/': html('<a href="/a">a</a>'), '/a': html('<a href="/b">b</a>'), '/b': html('end') });
    const stored = validateSeed({ arena: 'differs', rateLimits: { [site.key]: 'unlimited' }, start: [`${site.origin}/`], maxDepth: 1, allowPrivateNetworks: true });
    const local = validateSeed({ ...storableSeed(stored), maxDepth: 5 });
    await kickoff(world.redis, stored);
    const { log, lines } = capture();
    const summary = await runWorker(world.redis, local, { logger: log, exitWhenDone: true, concurrency: 2 });
    assert.ok(lines.some((l) => l.level === 40 && /differs from the one kickoff stored/.test(l.msg)), 'warned');
    // The stored maxDepth (1) ruled: "/" and "/a", never "/b".
    assert.equal(summary.pages, 2);
    assert.equal(world.web.fetched('S', '/b'), 0);
  });

  it('a worker whose seed file says another shard count than the arena has is refused, naming both', async () => {
    const stored = validateSeed({ arena: 'sharded', rateLimits: { 'a.test': 1 }, start: ['http://a.test/'], shards: 3 });
    await kickoff(world.redis, stored);
    await assert.rejects(storedSeed(world.redis, validateSeed({ ...storableSeed(stored), shards: 5 })), (e: Error & { code?: string }) => e.code === 'WEIR_SHARDS_MISMATCH' && /has 3 shards.*says shards: 5/.test(e.message));
    // Without the field, or with the same count, it goes on.
    assert.equal((await storedSeed(world.redis, validateSeed({ ...storableSeed(stored), shards: null })))?.shards, 3);
    await assert.rejects(kickoff(world.redis, validateSeed({ ...storableSeed(stored), shards: 4 })), (e: Error & { code?: string }) => e.code === 'WEIR_SHARDS_MISMATCH');
  });

  it('a worker started before kickoff waits for it (saying so once), and one aborted meanwhile returns null', async () => {
    const site = await world.web.site('W', { '/robots.txt': 'User-agent: *\nAllow: /\n', '/': html('home') });
    const seed = validateSeed({ arena: 'waits', rateLimits: { [site.key]: 'unlimited' }, start: [`${site.origin}/`], allowPrivateNetworks: true });
    const { log, lines } = capture();
    const waiting = storedSeed(world.redis, seed, { log });
    await new Promise((r) => setTimeout(r, 1200));
    await kickoff(world.redis, seed);
    assert.deepEqual(await waiting, seed);
    assert.equal(lines.filter((l) => /waiting for kickoff/.test(l.msg)).length, 1);
    const ac = new AbortController();
    const never = storedSeed(world.redis, { ...seed, arena: 'never-kicked-off' }, { signal: ac.signal });
    ac.abort();
    assert.equal(await never, null);
  });
});

describe('robots gate', () => {
  /** A stall of this process this long may cost a slot of the 1 s limit: a lost one is judged lost only at 400 ms past its time. */
  const STALL_EXCUSES_MS = 300;

  it('URLs drawn while robots.txt is being fetched spend no rate slot: the first page follows its answer, then full pace', async () => {
    const ROBOTS_MS = 1200;
    let answeredAt = 0;
    const site = await world.web.site('R', {
      '/robots.txt': async (_req, res) => {
        await new Promise((r) => setTimeout(r, ROBOTS_MS));
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end('User-agent: *\nAllow: /\n');
        answeredAt = performance.now();
      },
      '/': html('home'),
      '/p/1': html('1'),
      '/p/2': html('2'),
      '/p/3': html('3'),
    });
    const seed = validateSeed({
      arena: 'robotsgate',
      rateLimits: { [site.key]: 1 },
      start: ['/', '/p/1', '/p/2', '/p/3'].map((p) => `${site.origin}${p}`),
      maxInFlightPerDomain: 4,
      allowPrivateNetworks: true,
    });
    // (The site and both workers share this process: its stalls are watched.)
    const watch = stallWatch(STALL_EXCUSES_MS);
    const result = await runCrawl(world.redis, seed, { workers: 2, concurrency: 4 }).finally(() => watch.stop());
    assert.equal(result.stats.totals.pages, 4);
    const reqs = world.web.of('R');
    assert.equal(reqs[0]?.path, '/robots.txt');
    const arrivals = reqs.slice(1);
    const pages = arrivals.map((r) => r.at);
    assert.equal(pages.length, 4, 'each page fetched once');
    // Before the gate paused the domain, the slot one second after robots.txt
    // went to a URL that then waited 500 ms: the first page came a whole
    // interval after robots.txt was answered (800 ms here).
    const firstAfterAnswer = (pages[0] ?? 0) - answeredAt;
    assert.ok(firstAfterAnswer >= 0 && firstAfterAnswer < 400, `first page ${firstAfterAnswer.toFixed(0)} ms after robots.txt answered`);
    // A slot is lost only where a lane reached it too late to send (the
    // pacer then hands the lease back rather than send early or crowd the
    // next slot, and counts it: lateSlots), or where this process stalled
    // for most of an interval's slack (seen once in CI: a slot lost with
    // neither counted, its cause not found here); never to the robots.txt
    // fetch.
    const tallies = await world.redis.hgetall(crawlKeys('robotsgate', new FairQueue(world.redis)).stats);
    const late = Number(tallies['*:lateSlots'] ?? 0);
    const stalls = watch.stalls.length;
    const gaps: string[] = [];
    let lost = 0;
    for (let i = 1; i < pages.length; i++) {
      const gap = (pages[i] ?? 0) - (pages[i - 1] ?? 0);
      // Judged to the precision the site can vouch for (smallestGap): the
      // site runs in this process, beside both workers, and a stall here
      // can stamp the earlier request late by its `lag`.
      const vouched = smallestGap([arrivals[i - 1], arrivals[i]].filter((r) => r !== undefined));
      assert.ok(vouched >= 1000, `gap ${gap.toFixed(1)} ms (${vouched.toFixed(1)} with the earlier stamp's lag ${(arrivals[i - 1]?.lag ?? 0).toFixed(1)} ms) under the 1 s limit`);
      gaps.push(gap.toFixed(0));
      if (gap >= 1000 + 400) lost += Math.round(gap / 1000) - 1;
    }
    const calls = result.workers.map((w) => `${w.dequeues} dequeues, ${w.emptyDequeues} empty, ${w.wakeups} wake-ups`).join('; ');
    assert.ok(
      lost <= late + stalls,
      `${lost} slot(s) lost, ${late} late, ${stalls} stall(s) of ${STALL_EXCUSES_MS}+ ms (gaps ${gaps.join(', ')} ms; robotsWaits ${tallies['*:robotsWaits'] ?? 0}, released ${tallies['*:released'] ?? 0}; workers: ${calls})`,
    );
  });
});
