/**
 * The live status page in a real browser (Debian's Chromium through
 * playwright-core) against a real crawl: real redis-server, fixture sites on
 * 127.0.0.1, the page served by weir's own server.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { after, describe, it } from 'node:test';
import { promisify } from 'node:util';
import type { Browser, Page } from 'playwright-core';
import { kickoff } from '../../src/crawl/kickoff.js';
import { runWorker } from '../../src/crawl/run.js';
import { storableSeed, validateSeed } from '../../src/crawl/seed/seed.js';
import type { CrawlStats } from '../../src/crawl/counters/stats.js';
import { crawlKeys } from '../../src/crawl/store/keys.js';
import { FairQueue } from '../../src/queue/index.js';
import { serveStatus, type StatusServer } from '../../src/status/server.js';
import { StatusSource, type StatusView } from '../../src/status/source.js';
import { launchChromium, pageErrors, testOutput } from '../helpers/browser.js';
import { cliBundle } from '../helpers/cli-bundle.js';
import { treeSite } from '../helpers/web.js';
import { useCrawlWorld } from '../helpers/world.js';

const run = promisify(execFile);
let browser: Browser;
const servers: StatusServer[] = [];
const queues: FairQueue[] = [];
const world = useCrawlWorld('status', async () => {
  browser = await launchChromium();
});
after(async () => {
  for (const s of servers) await s.close();
  for (const q of queues) await q.close();
  await browser?.close();
});

/** What the page exposes for tests (web/status/app.js). */
interface Exposed {
  weirStatus: {
    refreshes: number;
    firstRenderMs: number | null;
    view: StatusView | null;
    charts: Map<string, { data: (number | null)[][]; root: { clientWidth: number } }>;
  };
}

async function servePage(arena: string): Promise<StatusServer> {
  const queue = new FairQueue(world.redis);
  queues.push(queue);
  const server = await serveStatus(new StatusSource(world.redis, queue, arena, world.server.url), { host: '127.0.0.1', port: 0 });
  servers.push(server);
  return server;
}

/** The page loaded and drawn once, with the size of the first /api/view body it read. */
async function openPage(url: string): Promise<{ page: Page; errors: string[]; firstViewBytes: number }> {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const errors = pageErrors(page);
  const firstView = page.waitForResponse((res) => new URL(res.url()).pathname === '/api/view', { timeout: 15_000 });
  await page.goto(url);
  await page.waitForFunction(() => (globalThis as unknown as Exposed).weirStatus.refreshes >= 1, undefined, { timeout: 15_000 });
  const firstViewBytes = (await (await firstView).body()).length;
  return { page, errors, firstViewBytes };
}

/** The view the page drew last, once it was drawn from a snapshot taken after Redis time `after`. */
async function viewAfter(page: Page, after: number): Promise<StatusView> {
  await page.waitForFunction((t) => ((globalThis as unknown as Exposed).weirStatus.view?.now ?? 0) > t, after, { timeout: 15_000 });
  return (await page.evaluate(() => (globalThis as unknown as Exposed).weirStatus.view)) as StatusView;
}

async function statusJson(seedPath: string): Promise<CrawlStats> {
  const { stdout } = await run(process.execPath, [cliBundle(), 'status', seedPath, '--json', '--redis', world.server.url]);
  return JSON.parse(stdout) as CrawlStats;
}

const COUNTS = ['queued', 'leased', 'done', 'pages', 'failed', 'dead', 'robotsBlocked'] as const;

describe('the live status page, in Chromium', () => {
  it('during a crawl: every domain has a row, numbers move, each domain plots its pace against its limit, matches status --json, no console errors', async (t) => {
    const rates = [5, 4, 3, 3, 2, 2];
    const sites = await Promise.all(rates.map((_, i) => world.web.site(`S${i}`, { '/robots.txt': 'User-agent: *\nAllow: /\n' }, treeSite(36))));
    const seed = validateSeed({
      arena: 'statuspage',
      rateLimits: Object.fromEntries(sites.map((s, i) => [s.key, rates[i]])),
      start: sites.map((s) => `${s.origin}/`),
      maxInFlightPerDomain: 2,
      allowPrivateNetworks: true,
    });
    const seedPath = world.file('statuspage.json');
    await writeFile(seedPath, JSON.stringify(storableSeed(seed)));
    await kickoff(world.redis, seed);
    const crawl = Promise.all([0, 1].map(() => runWorker(world.redis, seed, { exitWhenDone: true, concurrency: 6 })));
    const server = await servePage('statuspage');
    const { page, errors } = await openPage(server.url);

    const domains = await page.locator('#domains tbody tr td:first-child').allTextContents();
    assert.deepEqual([...domains].sort(), sites.map((s) => s.key).sort(), 'a row per domain');
    assert.match((await page.locator('#arena').textContent()) ?? '', /statuspage/);

    const look = async () => (await page.locator('#totals, #domains tbody').allTextContents()).join('|');
    const first = await look();
    const refreshes = await page.evaluate(() => (globalThis as unknown as Exposed).weirStatus.refreshes);
    await page.waitForFunction((n) => (globalThis as unknown as Exposed).weirStatus.refreshes >= n + 2, refreshes, { timeout: 15_000 });
    assert.notEqual(await look(), first, 'the numbers changed between two looks');

    // The page and `weir status --json` agree: counts only grow, so the
    // CLI's read lies between the page's view before it and the one after.
    const before = (await page.evaluate(() => (globalThis as unknown as Exposed).weirStatus.view)) as StatusView;
    const cli = await statusJson(seedPath);
    const later = await viewAfter(page, cli.now);
    for (const d of cli.domains) {
      const a = before.rows.find((r) => r.domain === d.domain);
      const b = later.rows.find((r) => r.domain === d.domain);
      assert.ok(a && b, d.domain);
      for (const k of ['done', 'pages'] as const) assert.ok(a[k] <= d[k] && d[k] <= b[k], `${d.domain} ${k}: page ${a[k]} ≤ status --json ${d[k]} ≤ page ${b[k]}`);
      assert.equal(b.rateLimit, d.rateLimit);
    }

    // Each domain's line gets points (complete 5 s buckets) and its limit line.
    await page.waitForFunction(
      () => {
        const charts = [...(globalThis as unknown as Exposed).weirStatus.charts.values()];
        return charts.length === 6 && charts.every((c) => (c.data[1] ?? []).filter((v) => (v ?? 0) > 0).length >= 2);
      },
      undefined,
      { timeout: 60_000, polling: 500 },
    );
    const charts = await page.evaluate(() =>
      [...(globalThis as unknown as Exposed).weirStatus.charts].map(([domain, c]) => ({ domain, points: (c.data[1] ?? []).filter((v) => (v ?? 0) > 0).length, limits: [...new Set(c.data[2])], width: c.root.clientWidth })),
    );
    for (const c of charts) {
      const rate = rates[sites.findIndex((s) => s.key === c.domain)];
      assert.ok(c.points >= 2, `${c.domain}: ${c.points} points`);
      assert.deepEqual(c.limits, [rate], `${c.domain}: its limit line`);
      assert.ok(c.width > 0);
    }
    const shot = testOutput('status-page.png');
    await page.screenshot({ path: shot, fullPage: true });
    t.diagnostic(`screenshot: ${shot}`);

    // Once drained, the page and status --json agree exactly.
    await crawl;
    const done = await statusJson(seedPath);
    const final = await viewAfter(page, done.now);
    assert.ok(final.drained);
    for (const d of done.domains) {
      const row = final.rows.find((r) => r.domain === d.domain);
      for (const k of COUNTS) assert.equal(row?.[k], d[k], `${d.domain} ${k}`);
    }
    assert.equal(final.totals.pages, 6 * 36);
    assert.deepEqual(errors, [], 'no errors in the browser console');
    await page.close();
  });

  it('10,000 domains: the first draw reads one page of the table; search, sort and pages work; the dead letter lists reasons', async (t) => {
    const arena = 'tenthousand';
    const queue = new FairQueue(world.redis);
    queues.push(queue);
    const names = Array.from({ length: 10_000 }, (_, i) => `site${String(i).padStart(5, '0')}.example`);
    await queue.setLimits(arena, Object.fromEntries(names.map((n, i) => [n, { rate: 1 + (i % 5) }])));
    for (let i = 0; i < names.length; i += 500) {
      await Promise.all(names.slice(i, i + 500).map((n) => queue.enqueue(arena, n, [JSON.stringify({ u: `http://${n}/`, d: 0, r: null, h: 0 })])));
    }
    const keys = crawlKeys(arena, queue);
    await world.redis.hset(keys.stats, Object.fromEntries(names.map((n, i) => [`${n}:pages`, String(i % 1000)])));
    const lease = await queue.dequeue(arena);
    assert.ok(lease.lease);
    await queue.fail(lease.lease, 'HTTP 500 <script>alert(1)</script> five times');

    const server = await servePage(arena);
    const { page, errors, firstViewBytes } = await openPage(server.url);
    // What keeps the first draw fast however big the arena is: it waits for one
    // page of the table, not the arena. Its time is a benchmark's business
    // (BENCH_PART=bigarena npm run bench:crawl), not a bound here on a loaded machine.
    const firstRenderMs = await page.evaluate(() => (globalThis as unknown as Exposed).weirStatus.firstRenderMs ?? Infinity);
    t.diagnostic(`first render of 10,000 domains: ${firstRenderMs.toFixed(0)} ms after navigation; the view it drew ${firstViewBytes} bytes`);
    assert.ok(firstViewBytes < 32 * 1024, `the first view sent ${firstViewBytes} bytes for 25 rows of 10,000`);
    assert.equal(await page.locator('#page-info').textContent(), '1–25 of 10000');
    assert.equal(await page.locator('#domains tbody tr').count(), 25);

    await page.fill('#search', 'site09999');
    await page.waitForFunction(() => (globalThis as unknown as Exposed).weirStatus.view?.matched === 1);
    assert.deepEqual(await page.locator('#domains tbody tr td:first-child').allTextContents(), ['site09999.example']);
    await page.fill('#search', '');
    await page.waitForFunction(() => (globalThis as unknown as Exposed).weirStatus.view?.matched === 10_000);
    await page.click('th[data-sort="pages"]');
    await page.waitForFunction(() => (globalThis as unknown as Exposed).weirStatus.view?.query.sort === 'pages');
    const top = (await page.locator('#domains tbody tr td:nth-child(5)').allTextContents()).slice(0, 2);
    assert.deepEqual(top, ['999', '999']);
    await page.click('#next');
    await page.waitForFunction(() => (globalThis as unknown as Exposed).weirStatus.view?.query.page === 1);
    assert.equal(await page.locator('#page-info').textContent(), '26–50 of 10000');

    assert.equal(await page.locator('#dead tbody tr').count(), 1);
    assert.deepEqual(await page.locator('#dead tbody tr td:nth-child(3)').allTextContents(), ['HTTP 500 <script>alert(1)</script> five times'], 'the reason, as text');
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('a crawl that revisits: the totals show its revisits and what they found', async () => {
    const arena = 'revisiting';
    const queue = new FairQueue(world.redis);
    queues.push(queue);
    await queue.setLimits(arena, { 'a.example': { rate: 1 } });
    const counts = { revisits: 40, revisitsChanged: 9, revisitsUnchanged: 6, revisitsNotModified: 25, revisitsGone: 1 };
    await world.redis.hset(crawlKeys(arena, queue).stats, Object.fromEntries(Object.entries(counts).map(([k, v]) => [`*:${k}`, String(v)])));
    const server = await servePage(arena);
    const { page, errors } = await openPage(server.url);
    await page.waitForSelector('#totals [data-total="revisits"]');
    const card = async (label: string): Promise<string | null> => page.locator(`#totals [data-total="${label}"] b`).textContent();
    assert.deepEqual(
      [await card('revisits'), await card('changed'), await card('unchanged'), await card('not modified (304)'), await card('gone'), await card('waiting: revisits, retries')],
      ['40', '9', '6', '25', '1', '0'],
    );
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('bad requests get a clear status and never stop the page for others', async () => {
    const server = await servePage('statuspage');
    const url = (path: string) => new URL(path, server.url);
    const json = async (res: Response) => ((await res.json()) as { error: string }).error;
    let res = await fetch(url('/nope'));
    assert.equal(res.status, 404);
    assert.match(await json(res), /no such page/);
    res = await fetch(url('/'), { method: 'POST', body: 'x' });
    assert.equal(res.status, 405);
    assert.equal(res.headers.get('allow'), 'GET, HEAD');
    res = await fetch(url(`/api/view?q=${'a'.repeat(5000)}`));
    assert.equal(res.status, 414);
    res = await fetch(url('/api/view?sort=constructor'));
    assert.equal(res.status, 400);
    assert.match(await json(res), /^sort: one of/);
    res = await fetch(url('/api/view?page=-1'));
    assert.equal(res.status, 400);
    res = await fetch(url('/api/view?size=100000'));
    assert.equal(res.status, 400);
    res = await fetch(url('/api/view'), { headers: { 'x-huge': 'h'.repeat(20_000) } });
    assert.equal(res.status, 431);

    const { port } = new URL(server.url);
    // Another name for this address (DNS rebinding): misdirected, nothing read.
    const withHost = (host: string): Promise<number> =>
      new Promise((resolve, reject) => {
        const r = request({ host: '127.0.0.1', port: Number(port), path: '/api/view', headers: { host } }, (answer) => {
          answer.resume();
          resolve(answer.statusCode ?? 0);
        });
        r.on('error', reject);
        r.end();
      });
    assert.equal(await withHost(`attacker.example:${port}`), 421);
    assert.equal(await withHost(`localhost:${port}`), 200);

    // 400 idle sockets and 50 that send half a request: others are still served.
    const sockets: Socket[] = [];
    for (let i = 0; i < 450; i++) {
      const s = connect(Number(port), '127.0.0.1');
      s.on('error', () => undefined);
      if (i >= 400) s.write('GET /api/view HTTP/1.1\r\nHost: x\r\nX-Slow: ');
      sockets.push(s);
    }
    await new Promise((r) => setTimeout(r, 300));
    const { page, errors } = await openPage(server.url);
    res = await fetch(url('/api/status'));
    assert.equal(res.status, 200);
    assert.equal(((await res.json()) as CrawlStats).arena, 'statuspage');
    assert.deepEqual(errors, []);
    await page.close();
    for (const s of sockets) s.destroy();
  });

  it('weir status --serve: prints its address, serves the JSON, stops on SIGTERM; --host needs --serve', async () => {
    const seedPath = world.file('statuspage.json');
    const child = execFile(process.execPath, [cliBundle(), 'status', seedPath, '--serve', '0', '--redis', world.server.url]);
    const line = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout?.on('data', (c: Buffer) => {
        out += c.toString();
        if (out.includes('\n')) resolve(out);
      });
      child.once('exit', (code) => reject(new Error(`exited ${code}: ${out}`)));
    });
    const address = /at (http:\/\/127\.0\.0\.1:\d+\/)/.exec(line)?.[1];
    assert.ok(address, line);
    const stats = (await (await fetch(`${address}api/status`)).json()) as CrawlStats;
    assert.equal(stats.arena, 'statuspage');
    const exited = new Promise<number | null>((r) => child.once('exit', r));
    child.kill('SIGTERM');
    assert.equal(await exited, 0);
    await assert.rejects(run(process.execPath, [cliBundle(), 'status', seedPath, '--host', '0.0.0.0', '--redis', world.server.url]), (err: { code: number; stderr: string }) => {
      assert.equal(err.code, 2);
      assert.match(err.stderr, /--host needs --serve/);
      return true;
    });
  });
});
