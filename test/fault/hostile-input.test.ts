/**
 * Hostile input, round two: what a hostile site or a careless seed could
 * still do, each on loopback with real servers. Every case failed on the
 * main branch before these fixes (see the README's failure table).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { JsonlWriter } from '../../src/crawl/output/jsonl.js';
import { runCrawl } from '../../src/crawl/run.js';
import { storableSeed, validateSeed } from '../../src/crawl/seed/seed.js';
import { FairQueue } from '../../src/queue/index.js';
import { html, smallestGap, type FixtureWeb } from '../helpers/web.js';
import { startSiteProcess } from '../helpers/site-process.js';
import { readJsonl, useCrawlWorld } from '../helpers/world.js';

const ROOT = new URL('../../', import.meta.url).pathname;

const world = useCrawlWorld('hostile2');

/** A normal site of `n` pages linked from its home page. */
async function normalSite(name: string, n: number): Promise<ReturnType<FixtureWeb['site']>> {
  const routes: Record<string, string> = { '/robots.txt': 'User-agent: *\nAllow: /\n', '/': html(Array.from({ length: n - 1 }, (_, i) => `<a href="/n/${i}">${i}</a>`).join(' ')) };
  for (let i = 0; i < n - 1; i++) routes[`/n/${i}`] = html(`page ${i}`);
  return world.web.site(name, routes);
}

describe('a hostile site cannot stop a crawl', () => {
  it('a backtracking-hostile robots.txt rule and include/exclude patterns on hostile paths: the crawl ends, the other domain keeps its pace', async () => {
    const long = (k: number): string => `/${'a'.repeat(k)}`;
    const hostile = await world.web.site('H', {
      '/robots.txt': 'User-agent: *\nDisallow: /*a*a*a*a*a*a*a*a*a*a*a*a*b$\n',
      '/': html([48, 64, 200, 2000].map((k) => `<a href="${long(k)}">x</a> <a href="${long(k)}!">y</a>`).join(' ')),
      ...Object.fromEntries([48, 64, 200, 2000].map((k) => [long(k), html('deep')])),
    });
    // The normal domain in a process of its own: this one runs the workers, and must not delay its clock.
    const normal = await startSiteProcess('N', {
      routes: { '/robots.txt': 'User-agent: *\nAllow: /\n', '/': html(Array.from({ length: 14 }, (_, i) => `<a href="/n/${i}">${i}</a>`).join(' ')) },
      fallback: html('page'),
    });
    const seed = validateSeed({
      arena: 'regex',
      rateLimits: { [hostile.key]: 'unlimited', [normal.key]: 10 },
      start: [`${hostile.origin}/`, `${normal.origin}/`],
      exclude: ['(a+)+$', '(x+x+)+y'],
      allowPrivateNetworks: true,
      maxInFlightPerDomain: 2,
    });
    const started = performance.now();
    const r = await runCrawl(world.redis, seed, { workers: 2, concurrency: 4 });
    const seconds = (performance.now() - started) / 1000;
    assert.ok(seconds < 30, `the crawl ended (${seconds.toFixed(1)} s)`);
    // `(a+)+$` excluded the links ending in a's; those ending in "!" were fetched (the robots rule needs a final b).
    for (const k of [48, 64, 200, 2000]) {
      assert.equal(world.web.fetched('H', long(k)), 0, `excluded ${k}`);
      assert.equal(world.web.fetched('H', `${long(k)}!`), 1, `fetched ${k}!`);
    }
    const n = await normal.log();
    await normal.close();
    assert.equal(n.length, 15 + 1);
    assert.ok(smallestGap(n) >= 100, `N kept its pace: ${smallestGap(n).toFixed(1)} ms`);
    assert.equal(r.stats.totals.dead, 0);
  });

  it('503 with Retry-After: 0 cannot keep a URL alive: a bounded number of tries, then the dead letter with the reason', async () => {
    const site = await world.web.site('Z', {
      '/robots.txt': 'User-agent: *\nAllow: /\n',
      '/': html('<a href="/forever">f</a>'),
      '/forever': (_req, res) => {
        res.writeHead(503, { 'retry-after': '0', 'content-type': 'text/plain' });
        res.end('later');
      },
    });
    const seed = validateSeed({ arena: 'retry0', rateLimits: { [site.key]: 'unlimited' }, start: [`${site.origin}/`], allowPrivateNetworks: true });
    const out = world.file('retry0.jsonl');
    const r = await runCrawl(world.redis, seed, { workers: 1, concurrency: 2, out, pacingFloorMs: 10 });
    assert.equal(world.web.fetched('Z', '/forever'), 11, '10 paced retries, then given up');
    const dead = await new FairQueue(world.redis).dead('retry0');
    assert.equal(dead.length, 1);
    assert.match(dead[0]?.reason ?? '', /asked to slow down 11 times \(HTTP 503, Retry-After 0s\)/);
    assert.equal(r.stats.totals.errors, 1);
    const rec = (await readJsonl(out)).find((l) => l.url.endsWith('/forever'));
    assert.equal(rec?.status, 503);
    // The floor doubles: 10, 20, 40 … ms between tries, never back to back.
    const at = world.web.of('Z').filter((q) => q.path === '/forever').map((q) => q.at);
    for (let i = 1; i < at.length; i++) assert.ok((at[i] ?? 0) - (at[i - 1] ?? 0) >= Math.min(60_000, 10 * 2 ** (i - 1)) - 5, `try ${i + 1} came too soon`);
  });

  it('a tiny Crawl-delay is clamped to the fastest rate the queue keeps: no lease left behind, nothing dead', async () => {
    const site = await normalSite('T', 6);
    const robots = await world.web.site('T2', { '/robots.txt': 'User-agent: *\nCrawl-delay: 0.0000000001\n', '/': html('<a href="/x">x</a>'), '/x': html('x') });
    const seed = validateSeed({ arena: 'tinydelay', rateLimits: { [site.key]: 'unlimited', [robots.key]: 'unlimited' }, start: [`${site.origin}/`, `${robots.origin}/`], allowPrivateNetworks: true });
    const started = performance.now();
    const r = await runCrawl(world.redis, seed, { workers: 1, concurrency: 4, leaseMs: 5000 });
    assert.ok(performance.now() - started < 4000, 'no URL waited out its lease');
    assert.equal(r.stats.totals.pages, 6 + 2);
    assert.equal(r.stats.totals.dead, 0);
    assert.equal(world.web.fetched('T2', '/x'), 1);
  });
});

describe('leases and results agree', () => {
  it('a 3 s fetch on a 1 s lease: renewed, fetched once, one line, one page', async () => {
    const site = await world.web.site('L', {
      '/robots.txt': 'User-agent: *\nAllow: /\n',
      '/': async (_req, res) => {
        await new Promise((r) => setTimeout(r, 3000));
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end(html('slow'));
      },
    });
    const seed = validateSeed({ arena: 'slowlease', rateLimits: { [site.key]: 'unlimited' }, start: [`${site.origin}/`], allowPrivateNetworks: true, requestTimeoutMs: 10_000 });
    const out = world.file('slowlease.jsonl');
    const r = await runCrawl(world.redis, seed, { workers: 2, concurrency: 2, leaseMs: 1000, out });
    assert.equal(world.web.fetched('L', '/'), 1);
    assert.deepEqual((await readJsonl(out)).map((l) => [l.status, l.error]), [[200, null]]);
    assert.equal(r.stats.totals.pages, 1);
    assert.equal((await new FairQueue(world.redis).stats('slowlease')).expired, 0);
  });

  it('a commit that finds its lease expired writes no line and counts no page (settle)', async () => {
    const { Settler } = await import('../../src/crawl/lease/settle.js');
    const { PageBudget } = await import('../../src/crawl/lease/budget.js');
    const { Tally } = await import('../../src/crawl/counters/tally.js');
    const { queuedUrl } = await import('../../src/crawl/store/item.js');
    const q = new FairQueue(world.redis, { leaseMs: 50 });
    await q.setLimits('stale', { d: { rate: 'unlimited' } });
    await q.enqueue('stale', 'd', [JSON.stringify({ u: 'http://d.test/', d: 0, r: null, h: 0 })]);
    await world.redis.set('weir:{stale}:pages', '1');
    const lease = await q.take('stale');
    assert.ok(lease);
    await new Promise((r) => setTimeout(r, 120));
    const out = world.file('stale.jsonl');
    const writer = new JsonlWriter(out);
    const tally = new Tally();
    const settler = new Settler({ queue: q, budget: new PageBudget(world.redis, 'weir:{stale}:pages', 10), tally, out: writer });
    await settler.settle({ lease, item: queuedUrl('http://d.test/'), reserved: true }, { kind: 'commit', page: true, record: { status: 200 }, tallies: [['pages', 1]] });
    await writer.close();
    assert.equal((await readFile(out, 'utf8')).length, 0, 'no output line');
    assert.equal(tally.local.pages, 0);
    assert.equal(tally.local.stale, 1);
    assert.equal(await world.redis.get('weir:{stale}:pages'), '0', 'the page reservation went back');
    await q.close();
  });
});

describe('one crawl per arena', () => {
  it('a second `weir crawl` on an arena another crawl drives refuses, naming it, and leaves the output alone', async () => {
    const site = await world.web.site('C', {
      '/robots.txt': 'User-agent: *\nAllow: /\n',
      '/': html(Array.from({ length: 10 }, (_, i) => `<a href="/c/${i}">${i}</a>`).join(' ')),
      ...Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`/c/${i}`, html(`c${i}`)])),
    });
    const seed = validateSeed({ arena: 'twocrawls', rateLimits: { [site.key]: 4 }, start: [`${site.origin}/`], allowPrivateNetworks: true });
    const seedPath = world.file('twocrawls.json');
    await writeFile(seedPath, JSON.stringify(storableSeed(seed)));
    const out = world.file('twocrawls.jsonl');
    const first = runCrawl(world.redis, seed, { workers: 1, concurrency: 2, out });
    while (world.web.fetched('C', '/c/0') + world.web.fetched('C', '/c/1') === 0) await new Promise((r) => setTimeout(r, 50));
    const second = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src/cli.ts'), 'crawl', seedPath, '--redis', world.server.url, '--workers', '1', '--out', out], {
      env: { ...process.env, WEIR_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    second.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((r) => second.on('exit', r));
    assert.equal(code, 1);
    assert.match(stderr, new RegExp(`arena twocrawls is being crawled by the crawl of pid ${process.pid} on `));
    const r = await first;
    assert.equal(r.stats.totals.pages, 11);
    assert.equal((await readJsonl(out)).length, 11, 'the first crawl\'s output kept every line');
    // Once it ended, the arena is free again.
    const again = await runCrawl(world.redis, seed, { workers: 1, concurrency: 1 });
    assert.equal(again.kickoff.enqueued, 0);
  });
});

describe('queue names', () => {
  it('a queue name with a newline is its own queue: batched enqueues never mix names', async () => {
    const q = new FairQueue(world.redis);
    await q.setLimits('names', { a: { rate: 'unlimited' }, 'a\nb': { rate: 'unlimited' }, 'a\n0': { rate: 'unlimited' } });
    await q.configureDedupe('names', { bits: 512 * 16, hashes: 2 });
    const [x, y, z] = await Promise.all([q.enqueue('names', 'a\nb', ['one'], { dedupe: [[1, 2]] }), q.enqueue('names', 'a', ['two']), q.enqueue('names', 'a\n0', ['three'])]);
    assert.deepEqual([x, y, z], [1, 1, 1]);
    const byName = Object.fromEntries((await q.allQueueStats('names')).map((s) => [s.name, s.queued]));
    assert.deepEqual(byName, { a: 1, 'a\nb': 1, 'a\n0': 1 });
    await q.close();
  });
});
