/**
 * Hostile servers, all on 127.0.0.1: each gets a bounded, recorded outcome,
 * the worker's peak RSS stays bounded, and a normal domain crawled at the
 * same time keeps being served at its rate.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { constants, createBrotliCompress, createGzip, gzipSync } from 'node:zlib';
import { kickoff } from '../../src/crawl/kickoff.js';
import { guardedLookup } from '../../src/crawl/fetch/netguard.js';
import { JsonlWriter, type PageRecord } from '../../src/crawl/output/jsonl.js';
import { validateSeed } from '../../src/crawl/seed/seed.js';
import { CrawlWorker } from '../../src/crawl/worker.js';
import { html, smallestGap } from '../helpers/web.js';
import { startSiteProcess, type SiteProcess } from '../helpers/site-process.js';
import { readWarcFile } from '../helpers/warc-reader.js';
import { useCrawlWorld } from '../helpers/world.js';

const GiB = 1024 * 1024 * 1024;
const millionLinksText = Array.from({ length: 1_000_000 }, (_, i) => `<a href="/l/${i}">${i}</a>`).join('');
const MAX_BODY = 2 * 1024 * 1024;
/** Peak RSS a worker may reach on this suite: bodies are capped at 2 MiB, bombs at 2 MiB inflated. */
const RSS_LIMIT = 400 * 1024 * 1024;


/** 1 GiB of zeros compressed by a streaming compressor (never held inflated). */
function compressZeros(make: () => NodeJS.ReadWriteStream, bytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const z = make();
    const out: Buffer[] = [];
    z.on('data', (d: Buffer) => out.push(d));
    z.on('end', () => resolve(Buffer.concat(out)));
    z.on('error', reject);
    const chunk = Buffer.alloc(1 << 20);
    let left = bytes / chunk.length;
    const write = (): void => {
      while (left > 0) {
        left--;
        if (!z.write(chunk)) {
          z.once('drain', write);
          return;
        }
      }
      z.end();
    };
    write();
  });
}

let normal: SiteProcess;
/** The trickling site's timers, stopped at the end. */
const timers = new Set<NodeJS.Timeout>();
after(async () => {
  for (const t of timers) clearInterval(t);
  await normal.close();
});

const world = useCrawlWorld('hostile', async () => {
  const gzOnce = await compressZeros(() => createGzip({ level: 9 }), GiB);
  const gzTwice = gzipSync(gzOnce, { level: 9 });
  const brBomb = await compressZeros(() => createBrotliCompress({ params: { [constants.BROTLI_PARAM_QUALITY]: 5 } }), GiB);
  // Built once: writing it per request would stall this process, whose clock stamps the arrivals.
  const millionLinks = Buffer.from(millionLinksText);
  const routes = [
    '/trickle', '/endless', '/gzip-gzip-bomb', '/brotli-bomb', '/redirects/0', '/links', '/nested', '/cp1251', '/bad-utf8', '/reset', '/bad-status', '/bad-header', '/wrong-type',
  ];
  await world.web.site('H', {
    '/robots.txt': 'User-agent: *\nAllow: /\n',
    '/': html(routes.map((r) => `<a href="${r}">${r}</a>`).join(' ')),
    '/trickle': (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html', 'content-length': '100000' });
      const t = setInterval(() => res.write('x'), 1000);
      timers.add(t);
      res.on('close', () => clearInterval(t));
    },
    '/endless': (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      const chunk = Buffer.alloc(64 * 1024, 'a');
      const pump = (): void => {
        while (!res.destroyed && res.write(chunk));
        if (!res.destroyed) res.once('drain', pump);
      };
      pump();
    },
    '/gzip-gzip-bomb': (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'gzip, gzip' });
      res.end(gzTwice);
    },
    '/brotli-bomb': (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'br' });
      res.end(brBomb);
    },
    '/links': (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(millionLinks);
    },
    '/nested': html(`${'<div>'.repeat(100_000)}<a href="/deep">deep</a>${'</div>'.repeat(100_000)}`),
    '/cp1251': (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      // "Привет" in windows-1251, declared only in <meta>.
      res.end(Buffer.concat([Buffer.from('<html><head><meta charset="windows-1251"><title>'), Buffer.from([0xcf, 0xf0, 0xe8, 0xe2, 0xe5, 0xf2]), Buffer.from('</title></head><body>ok</body></html>')]));
    },
    '/bad-utf8': (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(Buffer.concat([Buffer.from('<title>a'), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('b</title>')]));
    },
    '/reset': (req) => {
      req.socket.destroy();
    },
    '/bad-status': (req) => {
      req.socket.end('HTTP/1.1 2000 WHAT IS THIS\r\ncontent-length: 2\r\n\r\nhi');
    },
    '/bad-header': (req) => {
      req.socket.end('HTTP/1.1 200 OK\r\nconte nt-length: x\r\n\0bad: \x01\r\n\r\nhi');
    },
    '/wrong-type': (_req, res) => {
      res.writeHead(200, { 'content-type': 'image/jpeg' });
      res.end(html('<a href="/never-parsed">x</a>'));
    },
  }, (req, res) => {
    const m = /^\/redirects\/(\d+)$/.exec(req.url ?? '');
    if (m) {
      res.writeHead(301, { location: `/redirects/${Number(m[1]) + 1}` });
      res.end();
      return;
    }
    res.writeHead(404, { 'content-type': 'text/html' });
    res.end('no');
  });
  // A normal site crawled at the same time, in a process of its own: this
  // one is busy serving the hostile site, and must not delay N's clock.
  normal = await startSiteProcess('N', {
    routes: { '/robots.txt': 'User-agent: *\nAllow: /\n', '/': html(Array.from({ length: 20 }, (_, i) => `<a href="/n/${i}">${i}</a>`).join(' ')) },
    fallback: html('normal'),
  });
});

function runWorker(cfg: Record<string, unknown>): Promise<{ summary: Record<string, unknown>; peakRss: number }> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['--import', 'tsx', new URL('./worker-runner.ts', import.meta.url).pathname, JSON.stringify(cfg)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out.trim().split('\n').pop() ?? '{}') as { summary: Record<string, unknown>; peakRss: number }) : reject(new Error(`worker exited ${code}`))));
  });
}

describe('hostile servers', () => {
  let records: PageRecord[] = [];
  let peakRss = 0;
  const rec = (path: string): PageRecord | undefined => records.find((r) => new URL(r.url).pathname + new URL(r.url).search === path && r.domain === world.web.sites.get('H')?.key);

  before(async () => {
    const H = world.web.sites.get('H');
    const N = normal;
    assert.ok(H);
    const seed = {
      arena: 'hostile',
      rateLimits: { [H.key]: 'unlimited', [N.key]: 10 },
      start: [`${H.origin}/`, `${N.origin}/`],
      maxDepth: 1,
      maxBodyBytes: MAX_BODY,
      requestTimeoutMs: 3000,
      maxRedirects: 10,
      allowPrivateNetworks: true,
      bloom: { expectedUrls: 100000, falsePositiveRate: 0.000001 },
    };
    await kickoff(world.redis, validateSeed(seed));
    const out = join(world.dir, 'hostile.jsonl');
    // With WARC output on: every body the worker reads also goes to its record.
    const r = await runWorker({ redisUrl: world.server.url, seed, concurrency: 8, retryBaseMs: 20, out, warc: { dir: join(world.dir, 'warc') } });
    peakRss = r.peakRss;
    records = (await readFile(out, 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as PageRecord);
  });

  it('cuts a world.server that trickles a byte a second at the request deadline', () => {
    assert.match(rec('/trickle')?.error ?? '', /deadline|WEIR_TIMEOUT/);
  });

  it('stops reading an endless body and decompression bombs at maxBodyBytes (counted after decompression)', () => {
    for (const p of ['/endless', '/gzip-gzip-bomb', '/brotli-bomb']) {
      const r = rec(p);
      assert.equal(r?.bytes, MAX_BODY, p);
      assert.match(r?.error ?? '', /truncated/, p);
    }
  });

  it('follows a 10,000-redirect chain for maxRedirects hops only', () => {
    const hops = records.filter((r) => /\/redirects\/\d+$/.test(r.url));
    assert.equal(hops.length, 11);
    assert.match(hops.find((r) => r.url.endsWith('/redirects/10'))?.error ?? '', /more than 10 redirects/);
    assert.equal(world.web.fetched('H', '/redirects/11'), 0);
  });

  it('parses a page with a million links and 100,000 nested elements, within its limits', () => {
    // Exactly the links whose tags end within the first maxBodyBytes: the rest is never read.
    const within = (millionLinksText.slice(0, MAX_BODY).match(/<a href="\/l\/\d+">/g) ?? []).length;
    assert.ok(within > 50_000 && within < 1_000_000);
    assert.equal(rec('/links')?.links, within);
    assert.equal(rec('/nested')?.links, 1);
    assert.equal(rec('/nested')?.status, 200);
  });

  it('decodes a charset declared in <meta>, and invalid UTF-8 as U+FFFD', () => {
    assert.equal(rec('/cp1251')?.title, 'Привет');
    assert.equal(rec('/bad-utf8')?.title, 'a\uFFFD\uFFFD\uFFFDb');
  });

  it('gives malformed responses and connection resets a recorded error after bounded retries', () => {
    for (const p of ['/reset', '/bad-status', '/bad-header']) {
      const r = rec(p);
      assert.ok(r, p);
      assert.equal(r.status, null, p);
      assert.match(r.error ?? '', /gave up after 5 attempts/, p);
      assert.equal(world.web.fetched('H', p), 5, `${p}: attempts`);
    }
  });

  it('records a wrong content type without parsing it', () => {
    assert.equal(rec('/wrong-type')?.contentType, 'image/jpeg');
    assert.equal(world.web.fetched('H', '/never-parsed'), 0);
  });

  it('keeps each hostile exchange in the WARC files, cut where the fetch was cut', async () => {
    const dir = join(world.dir, 'warc');
    const responses = new Map<string, string[]>();
    const requests = new Map<string, number>();
    for (const f of (await readdir(dir)).filter((n) => n.endsWith('.warc.gz'))) {
      const w = await readWarcFile(join(dir, f));
      assert.equal(w.tornAt, null, `${f} readable to its end`);
      for (const r of w.records) {
        const path = r.header('WARC-Target-URI') ? new URL(r.header('WARC-Target-URI') as string).pathname : '';
        if (r.header('WARC-Type') === 'request') requests.set(path, (requests.get(path) ?? 0) + 1);
        if (r.header('WARC-Type') === 'response') responses.set(path, [...(responses.get(path) ?? []), r.header('WARC-Truncated') ?? 'complete']);
      }
    }
    for (const p of ['/endless', '/gzip-gzip-bomb', '/brotli-bomb', '/links']) assert.deepEqual(responses.get(p), ['length'], p);
    // Each try cut at the deadline.
    assert.deepEqual(responses.get('/trickle'), Array(world.web.fetched('H', '/trickle')).fill('time'));
    assert.deepEqual(responses.get('/cp1251'), ['complete']);
    // Sent five times, never answered: five requests, no response.
    assert.equal(requests.get('/reset'), 5);
    assert.equal(responses.get('/reset'), undefined);
  });

  it('keeps the worker\'s peak RSS bounded', (t) => {
    t.diagnostic(`worker peak RSS ${(peakRss / 1024 / 1024).toFixed(1)} MiB (limit ${RSS_LIMIT / 1024 / 1024} MiB)`);
    assert.ok(peakRss > 0 && peakRss < RSS_LIMIT, `peak RSS ${(peakRss / 1024 / 1024).toFixed(0)} MiB`);
  });

  it('meanwhile serves the normal domain at its rate, all of it', async () => {
    const n = await normal.log();
    assert.equal(n.filter((r) => r.path.startsWith('/n/')).length, 20);
    const n0 = n[0]?.at ?? 0;
    // Judged allowing for the site's own stamping lag (it measures it: see site-process.ts).
    assert.ok(smallestGap(n) >= 100, `smallest gap ${smallestGap(n)} ms\n${n.map((r) => `${(r.at - n0).toFixed(1)} ${r.path} (lag ${r.lag.toFixed(1)})`).join('\n')}`);
  });

  it('refuses a redirect to a private address when private networks are not allowed', async () => {
    const H = world.web.sites.get('H');
    assert.ok(H);
    // The site is reached by name through a resolver the test controls; its redirect targets are IP literals.
    await world.web.site('P', {
      '/robots.txt': 'User-agent: *\nAllow: /\n',
      '/': html('<a href="/to-metadata">m</a> <a href="/to-loopback">l</a>'),
      '/to-metadata': (_req, res) => {
        res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' });
        res.end();
      },
      '/to-loopback': (_req, res) => {
        res.writeHead(302, { location: `${H.origin}/` });
        res.end();
      },
    });
    const P = world.web.sites.get('P');
    assert.ok(P);
    const seed = validateSeed({
      arena: 'redirect-private',
      rateLimits: { [`public.test:${P.port}`]: 'unlimited', '169.254.169.254': 'unlimited', [H.key]: 'unlimited' },
      start: [`http://public.test:${P.port}/`],
    });
    await kickoff(world.redis, seed);
    const before = world.web.of('H').length;
    const out = new JsonlWriter(join(world.dir, 'redirect-private.jsonl'), { truncate: true });
    const lookup = guardedLookup(true, (_h, _o, cb) => cb(null, [{ address: '127.0.0.1', family: 4 }]));
    await new CrawlWorker(world.redis, seed, { concurrency: 2, exitWhenDone: true, out, lookup }).run();
    await out.close();
    const recs = (await readFile(join(world.dir, 'redirect-private.jsonl'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as PageRecord);
    assert.equal(world.web.of('H').length, before, 'the loopback target was never contacted');
    const refused = recs.filter((r) => /private, loopback or link-local/.test(r.error ?? ''));
    assert.equal(refused.length, 2, JSON.stringify(recs.map((r) => [r.url, r.status, r.error])));
  });
});
