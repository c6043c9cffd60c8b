/**
 * End-to-end crawls of a fixture web on 127.0.0.1 with real redis-servers.
 * Judged from the fixture servers' own request log.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { before, describe, it } from 'node:test';
import { kickoff } from '../../src/crawl/kickoff.js';
import { JsonlWriter, type PageRecord } from '../../src/crawl/output/jsonl.js';
import { validateSeed, type Seed } from '../../src/crawl/seed/seed.js';
import { CrawlWorker } from '../../src/crawl/worker.js';
import * as guard from '../../src/crawl/fetch/netguard.js';
import { CrawlMetrics } from '../../src/crawl/counters/metrics.js';
import { METRICS_LIMITS } from '../../src/crawl/counters/metrics-limits.js';
import { isWeirError } from '../../src/errors.js';
import { FairQueue } from '../../src/queue/index.js';
import { crawlStats } from '../../src/crawl/counters/stats.js';
import { html, smallestGap, type FixtureSite, type Handler } from '../helpers/web.js';
import { readJsonl, timeline, useCrawlWorld } from '../helpers/world.js';

const world = useCrawlWorld('crawl', () => fixtureCrawl());

const site = (name: string): FixtureSite => world.web.sites.get(name) ?? assert.fail(`no site ${name}`);
const redirect = (status: number, location: () => string): Handler => (_req, res) => {
  res.writeHead(status, { location: location() });
  res.end();
};

function seedFor(arena: string, extra: Record<string, unknown> = {}): Seed {
  const [A, B, C] = [site('A'), site('B'), site('C')];
  return validateSeed({
    arena,
    rateLimits: { [A.key]: 20, [B.key]: 50, [C.key]: 10 },
    start: [`${A.origin}/`, `${B.origin}/`, `${C.origin}/`],
    maxDepth: 6,
    maxBodyBytes: 1024 * 1024,
    allowPrivateNetworks: true,
    bloom: { expectedUrls: 10000, falsePositiveRate: 0.000001 },
    ...extra,
  });
}

/**
 * The fixture web: sites A, B and C in the seed, X outside it; each site's
 * routes stand beside the tests that judge them, below. One crawl of it
 * (two workers, leases of 600 ms) is judged by every test of the first
 * describe blocks.
 */
let records: PageRecord[] = [];
let workerEnds: number[] = [];
const slowEnds: number[] = [];

/** Sets up the fixture web and crawls it once (the world's set-up). */
async function fixtureCrawl(): Promise<void> {
  await world.web.site('X', { '/': html('<a href="/deeper">outside</a>') });
  await world.web.site('C', C_ROUTES);
  await world.web.site('B', B_ROUTES);
  await world.web.site('A', { ...A_LINKS, ...A_REDIRECTS, ...A_CALENDAR, ...A_BODIES });
  const seed = seedFor('fixture');
  await kickoff(world.redis, seed);
  const out = new JsonlWriter(world.file('out.jsonl'), { truncate: true });
  const workers = [0, 1].map(() => new CrawlWorker(world.redis, seed, { concurrency: 4, exitWhenDone: true, out, leaseMs: 600 }));
  workerEnds = await Promise.all(
    workers.map(async (w) => {
      await w.run();
      return performance.now();
    }),
  );
  await out.close();
  records = await readJsonl(world.file('out.jsonl'));
}

/** A's home page links to everything, in every form; robots.txt keeps weir out of /secret but /secret/open. */
const A_LINKS: Record<string, string | Handler> = {
  '/robots.txt': 'User-agent: *\nDisallow: /\n\nUser-agent: weir\nDisallow: /secret\nAllow: /secret/open\n',
  '/': (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(
      html(`
      <a href="/a">a</a> <a href="./b">b</a> <a href="/c#frag">c</a> <a href="/c">c again</a>
      <a href="/dir/sub/">sub</a> <a href="/secret/x">secret</a> <a href="/secret/open">open</a>
      <a href="mailto:x@example.org">mail</a> <a href="javascript:void(0)">js</a> <a href="tel:123">tel</a>
      <a href="${site('B').origin}/">B</a> <a href="${site('X').origin}/">outside</a> <a href="${site('C').origin}/">C</a>
      <a href="/redir1">r</a> <a href="/loop1">loop</a> <a href="/cal?d=0">calendar</a>
      <a href="/file.pdf">pdf</a> <a href="/big">big</a> <a href="/malformed">bad html</a> <a href="/base/">base</a>
      <a href="/notfound">404</a> <a rel="nofollow" href="/nofollowed">nf</a> <a href="http://[bad">broken</a>
      <script>document.write('<a href="/in-script">')</script>
      <textarea><a href="/in-textarea">t</a></textarea>
      <!-- <a href="/in-comment">c</a> -->
      <map><area href="/area" alt="x"></map>`),
    );
  },
  '/a': html('<a href="/">home</a>'),
  '/b': html('<a href="/">home</a>'),
  '/c': html('<a href="/">home</a>'),
  '/area': html('area'),
  '/dir/sub/': html('<a href="../up">up</a>'),
  '/dir/up': html('up'),
  '/secret/open': html('open'),
  '/malformed': "<html><body><a href='/a'>unclosed <div><p><a href=/m2>x</b></i><a href=\"/m3",
  '/m2': html('m2'),
  '/base/': html('<a href="x">x</a><base href="/b2/">'),
  '/b2/x': html('via base'),
};

describe('links', () => {
  it('fetches every reachable in-scope page exactly once (retries excepted)', () => {
    const expectA = ['/', '/a', '/b', '/c', '/area', '/dir/sub/', '/dir/up', '/secret/open', '/redir1', '/redir2', '/loop1', '/loop2', '/file.pdf', '/big', '/malformed', '/m2', '/base/', '/b2/x', '/notfound'];
    for (const p of expectA) assert.equal(world.web.fetched('A', p), 1, `A ${p}`);
    for (let d = 0; d <= 5; d++) assert.equal(world.web.fetched('A', `/cal?d=${d}`), 1, `calendar month ${d}`);
    for (const p of ['/', '/landing']) assert.equal(world.web.fetched('B', p), 1, `B ${p}`);
    assert.equal(world.web.fetched('C', '/'), 1);
  });

  it('fetches nothing out of scope, disallowed, nofollowed or hidden in script/textarea/comments', () => {
    assert.equal(world.web.of('X').length, 0, 'site outside the seed');
    for (const p of ['/secret/x', '/nofollowed', '/in-script', '/in-textarea', '/in-comment', '/after-limit']) assert.equal(world.web.fetched('A', p), 0, p);
    const secret = records.find((r) => r.url.endsWith('/secret/x'));
    assert.equal(secret?.error, 'disallowed by robots.txt');
  });

  it('fetches robots.txt first on every origin', () => {
    for (const name of ['A', 'B', 'C']) assert.equal(world.web.of(name)[0]?.path, '/robots.txt', name);
  });
});

/** A calendar: every month links to the next, forever. */
const A_CALENDAR: Record<string, Handler> = {
  '/cal': (req, res) => {
    const d = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('d'));
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(html(`<a href="/cal?d=${d + 1}">next month</a>`));
  },
};

describe('traps', () => {
  it('bounds the calendar trap by maxDepth', () => {
    assert.equal(world.web.fetched('A', '/cal?d=6'), 0);
  });
});

/** Redirects: a chain across sites, and a loop. */
const A_REDIRECTS: Record<string, Handler> = {
  '/redir1': redirect(301, () => '/redir2'),
  '/redir2': redirect(302, () => `${site('B').origin}/landing`),
  '/loop1': redirect(301, () => '/loop2'),
  '/loop2': redirect(301, () => '/loop1'),
};

/** Bodies: not HTML, and over maxBodyBytes (1 MiB here) with a link past the limit. */
const A_BODIES: Record<string, Handler> = {
  '/file.pdf': (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/pdf' });
    res.end(Buffer.alloc(5000, 1));
  },
  '/big': (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(html(`${'<p>filler</p>'.repeat(200_000)}<a href="/after-limit">late</a>`));
  },
};

describe('records', () => {
  it('records redirects as their own URLs, loops cut by dedupe, non-HTML and oversize bodies recorded', () => {
    const r1 = records.find((r) => r.url.endsWith('/redir1'));
    assert.equal(r1?.status, 301);
    assert.ok(r1?.redirect?.endsWith('/redir2'));
    const landing = records.find((r) => r.url.endsWith('/landing'));
    assert.equal(landing?.status, 200);
    const pdf = records.find((r) => r.url.endsWith('/file.pdf'));
    assert.equal(pdf?.contentType, 'application/pdf');
    assert.equal(pdf?.links, 0);
    const big = records.find((r) => r.url.endsWith('/big'));
    assert.match(big?.error ?? '', /truncated/);
    assert.equal(big?.bytes, 1024 * 1024);
    const nf = records.find((r) => r.url.endsWith('/notfound'));
    assert.equal(nf?.status, 404);
    const home = records.find((r) => r.url === `${site('A').origin}/`);
    assert.equal(home?.title, 'fixture');
    assert.equal(home?.depth, 0);
  });

  it('writes one output line per finished URL', () => {
    const urls = records.map((r) => r.url);
    assert.equal(new Set(urls).size, urls.length, 'no URL twice');
    // Exactly these, by path (three sites' "/"): every URL in scope and depth, each once.
    const paths = urls.map((u) => u.replace(/^http:\/\/127\.0\.0\.1:\d+/, '')).sort();
    assert.deepEqual(paths, [
      '/', '/', '/', '/a', '/area', '/b', '/b2/x', '/base/', '/big', '/c', '/cal?d=0', '/cal?d=1', '/cal?d=2', '/cal?d=3', '/cal?d=4', '/cal?d=5',
      '/dir/sub/', '/dir/up', '/file.pdf', '/flaky', '/landing', '/limited', '/loop1', '/loop2', '/m2', '/malformed', '/notfound', '/redir1', '/redir2',
      '/secret/open', '/secret/x', '/slow',
    ]);
  });
});

/** B: Crawl-delay 0.2 s (under its rate of 50/s), a 429 with Retry-After: 1, a 503 once. */
const B_ROUTES: Record<string, string | Handler> = {
  '/robots.txt': 'User-agent: *\nCrawl-delay: 0.2\n',
  '/': html('<a href="/limited">l</a> <a href="/flaky">f</a> <a href="/landing">land</a>'),
  '/limited': (_req, res, { count }) => {
    if (count === 1) {
      res.writeHead(429, { 'retry-after': '1', 'content-type': 'text/plain' });
      res.end('slow down');
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(html('ok now'));
  },
  '/flaky': (_req, res, { count }) => {
    res.writeHead(count === 1 ? 503 : 200, { 'content-type': 'text/html' });
    res.end(html(count === 1 ? 'down' : 'up'));
  },
  '/landing': html('landing'),
};

describe('politeness', () => {
  it('never hits a site faster than its rate or its Crawl-delay (robots.txt and redirects included)', () => {
    for (const [name, limit] of [['A', 50], ['B', 200], ['C', 100]] as const) {
      const gap = smallestGap(world.web.of(name));
      const shown = timeline(world.web.of(name)).map((r) => `${r.t.toFixed(1)} ${r.path}`).join('\n');
      assert.ok(gap >= limit, `${name} smallest gap ${gap} ms, limit ${limit}\n${shown}`);
    }
  });

  it('honours Retry-After: the domain waits, and the URL comes back no sooner; a 503 is retried', () => {
    assert.equal(world.web.fetched('B', '/limited'), 2, 'the 429 and its retry');
    assert.equal(world.web.fetched('B', '/flaky'), 2, 'the 503 and its retry');
    const b = world.web.of('B');
    const first429 = b.find((r) => r.path === '/limited');
    assert.ok(first429);
    const after429 = b.filter((r) => r.at > first429.at);
    assert.ok(after429.length > 0);
    // (To the precision the site can vouch for: its stamp of the 429 may be late by its lag.)
    for (const r of after429) assert.ok(r.at - first429.at + first429.lag >= 1000, `${r.path} ${Math.round(r.at - first429.at)} ms after the 429 (its stamp's lag ${first429.lag.toFixed(1)} ms)`);
  });
});

/** C: a page that answers after 1.5 s, longer than the crawl's 600 ms leases. */
const C_ROUTES: Record<string, string | Handler> = {
  '/': html('<a href="/slow">slow</a>'),
  '/slow': async (_req, res) => {
    await new Promise((r) => setTimeout(r, 1500));
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(html('slow page'));
    slowEnds.push(performance.now());
  },
};

describe('leases', () => {
  it('a fetch that outlives its lease renews it: fetched once', () => {
    assert.equal(world.web.fetched('C', '/slow'), 1);
  });

  it("exit-when-done waits for every worker's leases, not just its own queue view", () => {
    const slowEnd = slowEnds[0];
    assert.ok(slowEnd !== undefined);
    for (const end of workerEnds) assert.ok(end >= slowEnd, 'a worker exited while another still held the slow page');
  });
});

describe('the arena afterwards', () => {
  it('reports per-domain status from Redis', async () => {
    const s = await crawlStats(world.redis, 'fixture');
    assert.equal(s.drained, true);
    const a = s.domains.find((d) => d.domain === site('A').key);
    // A's final responses: its 21 pages (not robots.txt, not the 4 redirect hops, not /secret/x, which robots.txt refused).
    assert.equal(a?.pages, 21);
    assert.equal(a?.robotsBlocked, 1);
    const b = s.domains.find((d) => d.domain === site('B').key);
    assert.ok(b && b.rateLimit !== 'unlimited' && b.rateLimit <= 5 + 1e-9, `B limit after Crawl-delay: ${String(b?.rateLimit)}`);
    assert.equal(b.crawlDelay, 0.2);
    assert.equal(a?.crawlDelay, null);
    assert.equal(s.totals.robotsBlocked, s.domains.reduce((n, d) => n + d.robotsBlocked, 0));
    assert.ok(s.bloom && s.bloom.fill > 0);
  });

  it('a second kickoff enqueues nothing twice', async () => {
    const r = await kickoff(world.redis, seedFor('fixture'));
    assert.equal(r.enqueued, 0);
    // Its limits set again from the seed, B's Crawl-delay (robots.txt, cached for a day: not read again) still stands.
    const b = (await crawlStats(world.redis, 'fixture')).domains.find((d) => d.domain === site('B').key);
    assert.ok(b && b.rateLimit !== 'unlimited' && b.rateLimit <= 5 + 1e-9, `B limit after a second kickoff: ${String(b?.rateLimit)}`);
  });
});

describe('crawl limits and refusals', () => {
  before(async () => {
    // A tree of 40 pages.
    await world.web.site('M', {}, (req, res) => {
      const n = Number(/^\/p\/(\d+)$/.exec(req.url ?? '')?.[1] ?? (req.url === '/' ? 0 : -1));
      if (req.url === '/robots.txt' || n < 0 || n >= 40) {
        res.writeHead(404, { 'content-type': 'text/plain' });
        res.end('no');
        return;
      }
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(html([2 * n + 1, 2 * n + 2].filter((k) => k < 40).map((k) => `<a href="/p/${k}">${k}</a>`).join(' ')));
    });
    await world.web.site('R', {
      '/robots.txt': (_req, res) => {
        res.writeHead(503, { 'content-type': 'text/plain' });
        res.end('down');
      },
      '/': html('<a href="/x">x</a>'),
    });
  });

  it('maxPages is enforced across workers: exactly that many pages, the rest stays queued', async () => {
    const M = world.web.sites.get('M');
    assert.ok(M);
    const seed = validateSeed({ arena: 'maxpages', rateLimits: { [M.key]: 'unlimited' }, start: [`${M.origin}/`], allowPrivateNetworks: true, maxPages: 12, maxInFlightPerDomain: 8 });
    await kickoff(world.redis, seed);
    const before = world.web.of('M').filter((r) => r.path !== '/robots.txt').length;
    const summaries = await Promise.all([0, 1, 2].map(() => new CrawlWorker(world.redis, seed, { concurrency: 4, exitWhenDone: true }).run()));
    const pages = world.web.of('M').filter((r) => r.path !== '/robots.txt').length - before;
    assert.equal(pages, 12);
    assert.equal(summaries.reduce((a, s) => a + s.pages, 0), 12);
    assert.ok(summaries.every((s) => s.exitReason === 'maxPages' || s.exitReason === 'drained'));
    const s = await crawlStats(world.redis, 'maxpages');
    assert.ok(s.totals.queued > 0, 'nothing lost: the rest is still queued');
    assert.equal(s.totals.leased, 0);
  });

  it('refuses loopback addresses unless allowPrivateNetworks, checked at connect time', async () => {
    const M = world.web.sites.get('M');
    assert.ok(M);
    const seed = validateSeed({ arena: 'private', rateLimits: { [M.key]: 'unlimited', 'sneaky.test': 'unlimited' }, start: [`${M.origin}/`, `http://sneaky.test:${M.port}/`] });
    await kickoff(world.redis, seed);
    const before = world.web.of('M').length;
    const out = new JsonlWriter(join(world.dir, 'private.jsonl'), { truncate: true });
    // sneaky.test resolves to 127.0.0.1 through a resolver the test controls.
    const lookup = (host: string, options: { all?: boolean }, cb: (err: NodeJS.ErrnoException | null, address: string | { address: string; family: number }[], family?: number) => void): void => {
      const { guardedLookup } = guard;
      guardedLookup(false, (_h, _o, done) => done(null, [{ address: '127.0.0.1', family: 4 }]))(host, options, cb);
    };
    await new CrawlWorker(world.redis, seed, { concurrency: 2, exitWhenDone: true, out, lookup }).run();
    await out.close();
    assert.equal(world.web.of('M').length, before, 'nothing reached the loopback server');
    const recs = (await readFile(join(world.dir, 'private.jsonl'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as PageRecord);
    assert.equal(recs.length, 2);
    for (const r of recs) assert.match(r.error ?? '', /private, loopback or link-local/);
    assert.equal((await crawlStats(world.redis, 'private')).totals.dead, 2);
  });

  it('robots.txt answering 5xx disallows the origin, retries with backoff, then dead-letters its URLs', async () => {
    const R = world.web.sites.get('R');
    assert.ok(R);
    const seed = validateSeed({ arena: 'robots5xx', rateLimits: { [R.key]: 'unlimited' }, start: [`${R.origin}/`], allowPrivateNetworks: true });
    await kickoff(world.redis, seed);
    await new CrawlWorker(world.redis, seed, { concurrency: 2, exitWhenDone: true, robotsRetryBaseMs: 20 }).run();
    const reqs = world.web.of('R');
    assert.ok(reqs.every((r) => r.path === '/robots.txt'), 'no page fetched while robots.txt is unavailable');
    assert.equal(reqs.length, 5, 'ROBOTS.maxFailures attempts');
    for (let i = 1; i < reqs.length; i++) assert.ok((reqs[i]?.at ?? 0) - (reqs[i - 1]?.at ?? 0) + (reqs[i - 1]?.lag ?? 0) >= 20 * 2 ** (i - 1), `backoff before attempt ${i + 1}`);
    const s = await crawlStats(world.redis, 'robots5xx');
    assert.equal(s.totals.dead, 1);
    assert.equal(s.totals.errors, 1, 'a URL dead-lettered for robots.txt counts among errors');
    assert.equal(s.drained, true);
  });
});

describe('Prometheus metrics', () => {
  it('serves counters that match the crawl output, and per-domain queue gauges read from Redis', async () => {
    const M = world.web.sites.get('M');
    assert.ok(M);
    const seed = validateSeed({ arena: 'metrics', rateLimits: { [M.key]: 100 }, start: [`${M.origin}/`], allowPrivateNetworks: true });
    await kickoff(world.redis, seed);
    const queue = new FairQueue(world.redis);
    // (Every scrape reads Redis afresh here: the test compares them with the crawl as it goes.)
    const metrics = new CrawlMetrics(queue, 'metrics', { redisEveryMs: 0 });
    const port = await metrics.listen(0, '127.0.0.1');
    const scrape = async (): Promise<string> => (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const value = (text: string, series: string): number => Number(new RegExp(`^${series.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
    const out = new JsonlWriter(join(world.dir, 'metrics.jsonl'), { truncate: true });
    const worker = new CrawlWorker(world.redis, seed, { concurrency: 4, exitWhenDone: true, out, metrics });
    const running = worker.run();
    // Mid-crawl: the gauges come from Redis.
    while (world.web.of('M').length < 8) await new Promise((r) => setTimeout(r, 10));
    const mid = await scrape();
    assert.ok(Number.isFinite(value(mid, `weir_domain_queued{domain="${M.key}"}`)), mid);
    await running;
    await out.close();
    const end = await scrape();
    const recs = (await readFile(join(world.dir, 'metrics.jsonl'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as PageRecord);
    const ok = recs.filter((r) => r.status !== null && r.status >= 200 && r.status < 300).length;
    assert.equal(value(end, 'weir_pages_total{status_class="2xx"}'), ok);
    assert.equal(value(end, 'weir_leases_total{outcome="committed"}'), recs.length);
    assert.equal(value(end, 'weir_bytes_total'), recs.reduce((a, r) => a + r.bytes, 0));
    assert.equal(value(end, 'weir_fetch_duration_seconds_count'), recs.length);
    assert.equal(value(end, `weir_domain_queued{domain="${M.key}"}`), 0);
    assert.equal(value(end, `weir_domain_leased{domain="${M.key}"}`), 0);
    assert.ok(value(end, 'weir_dedupe_hits_total') >= 0);
    assert.equal(value(end, 'weir_arena_leases_expired'), 0);
    // The pacer's late tallies, by outcome (the worker counts them as it paces).
    const late = (text: string, outcome: string): number => value(text, `weir_late_requests_total{outcome="${outcome}"}`) || 0;
    const before = ['written_late', 'not_sent'].map((o) => late(end, o));
    metrics.count('lateSends', 1);
    metrics.count('lateSlots', 2);
    const after = await scrape();
    assert.deepEqual(['written_late', 'not_sent'].map((o, i) => late(after, o) - (before[i] ?? 0)), [1, 2]);
    await metrics.close();
    await queue.close();
  });

  it('listen on 127.0.0.1 unless told, report a port in use as an error, cut a client that never finishes its request, and read Redis once for many scrapes', async () => {
    const queue = new FairQueue(world.redis);
    const metrics = new CrawlMetrics(queue, 'metrics');
    const port = await metrics.listen(0);
    try {
      const server = (metrics as unknown as { server: Server }).server;
      assert.equal((server.address() as AddressInfo).address, '127.0.0.1', 'loopback by default');
      // A port in use: a WEIR_METRICS error to report, not an unhandled 'error' event.
      const second = new CrawlMetrics(queue, 'metrics');
      await assert.rejects(second.listen(port), (err: unknown) => isWeirError(err, 'WEIR_METRICS') && /EADDRINUSE/.test((err as Error).message));
      assert.equal((await fetch(`http://127.0.0.1:${port}/metrics`, { method: 'POST' })).status, 405);

      // Many scrapes within redisEveryMs: one read of the arena (commands counted by Redis itself).
      const commands = async (): Promise<number> => Number(/total_commands_processed:(\d+)/.exec(await world.redis.info('stats'))?.[1]);
      await fetch(`http://127.0.0.1:${port}/metrics`).then((r) => r.text());
      const before = await commands();
      for (let i = 0; i < 10; i++) await fetch(`http://127.0.0.1:${port}/metrics`).then((r) => r.text());
      assert.equal((await commands()) - before, 1, 'ten scrapes, no Redis command (but the INFO counting them)');

      // A client that sends half a request and stalls is cut at the request deadline.
      const socket = connect(port, '127.0.0.1');
      socket.on('error', () => undefined);
      socket.resume();
      socket.write('GET /metrics HTTP/1.1\r\nHost: x\r\n');
      const started = performance.now();
      await new Promise<void>((r) => socket.once('close', () => r()));
      const heldMs = performance.now() - started;
      assert.ok(heldMs < METRICS_LIMITS.requestMs + 5000, `cut after ${heldMs.toFixed(0)} ms`);
    } finally {
      await metrics.close();
      await queue.close();
    }
  });
});
