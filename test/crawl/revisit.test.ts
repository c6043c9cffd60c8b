/**
 * Revisits (seed revisit): a site whose pages change on known schedules,
 * crawled continuously by 2 workers at a fixed rate, then stopped. Judged
 * from the site's own log: every change found within 2× its page's change
 * interval once the schedule has settled, unchanged pages answered 304
 * with no body, the rate never exceeded, the visits spent mostly on the
 * pages that change; and, stopped, every kept URL still has a next visit.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { runCrawl } from '../../src/crawl/run.js';
import { validateSeed } from '../../src/crawl/seed/seed.js';
import { FairQueue } from '../../src/queue/index.js';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { html, smallestGap, type Handler } from '../helpers/web.js';
import { readWarcFile, type WarcRecordRead } from '../helpers/warc-reader.js';
import { readJsonl, useCrawlWorld } from '../helpers/world.js';

const world = useCrawlWorld('revisit');
const RATE = 20;
const RUN_MS = 26_000;

interface Seen {
  path: string;
  /** ms since the site started. */
  t: number;
  status: number;
  bytes: number;
}

describe('revisits', () => {
  it('pages changing every 2 s and 8 s, pages that never change (with and without validators), a page that goes away: changes found within 2× their interval, 304s without bodies, the rate kept, nothing lost on stop', async () => {
    const t0 = performance.now();
    const now = (): number => performance.now() - t0;
    const seen: Seen[] = [];
    /** A page at version floor(t / everyMs) (null: never changes), with an ETag when `validators`; 304 when the request's If-None-Match is the current one. */
    const page =
      (path: string, everyMs: number | null, validators = true): Handler =>
      (req: IncomingMessage, res: ServerResponse) => {
        const t = now();
        const version = everyMs === null ? 0 : Math.floor(t / everyMs);
        const etag = `"${path.slice(1) || 'index'}-${version}"`;
        if (validators && req.headers['if-none-match'] === etag) {
          res.writeHead(304, { etag });
          res.end();
          seen.push({ path, t, status: 304, bytes: 0 });
          return;
        }
        const body = html(path === '/' ? ['/fast', '/slow', '/never', '/plain', '/gone'].map((p) => `<a href="${p}">${p}</a>`).join(' ') : `${path} version ${version}`);
        res.writeHead(200, { 'content-type': 'text/html', ...(validators ? { etag } : {}) });
        res.end(body);
        seen.push({ path, t, status: 200, bytes: Buffer.byteLength(body) });
      };
    const gone: Handler = (_req, res) => {
      const t = now();
      const there = t < 4000;
      res.writeHead(there ? 200 : 404, { 'content-type': 'text/html' });
      res.end(html(there ? 'here for now' : 'gone'));
      seen.push({ path: '/gone', t, status: there ? 200 : 404, bytes: 0 });
    };
    const site = await world.web.site('changing', {
      '/': page('/', null),
      '/fast': page('/fast', 2000),
      '/slow': page('/slow', 8000),
      '/never': page('/never', null),
      '/plain': page('/plain', null, false),
      '/gone': gone,
    });
    const seed = validateSeed({
      arena: 'revisit',
      rateLimits: { [site.key]: RATE },
      maxInFlightPerDomain: 1,
      start: [`${site.origin}/`],
      revisit: { minIntervalSeconds: 1, initialIntervalSeconds: 2, maxIntervalSeconds: 8, goneAfter: 2 },
      allowPrivateNetworks: true,
    });
    const stop = AbortSignal.timeout(RUN_MS);
    const out = world.file('revisit.jsonl');
    const result = await runCrawl(world.redis, seed, { workers: 2, concurrency: 2, signal: stop, out });
    const log = world.web.of('changing');
    const of = (path: string): Seen[] => seen.filter((s) => s.path === path);

    // The site's rate, whatever the schedule wanted.
    assert.ok(smallestGap(log) >= 1000 / RATE, `${smallestGap(log).toFixed(1)} ms between two requests at ${RATE}/s`);

    // Every change found within 2× its page's change interval once settled (from 8 s on).
    for (const [path, every] of [['/fast', 2000], ['/slow', 8000]] as const) {
      const visits = of(path).map((s) => s.t);
      for (let b = Math.ceil(8000 / every) * every; b + 2 * every <= RUN_MS - 500; b += every) {
        const first = visits.find((t) => t >= b);
        assert.ok(first !== undefined && first - b <= 2 * every, `${path}: the version of ${b} ms first seen at ${first?.toFixed(0)} ms (visits at ${visits.map((t) => t.toFixed(0)).join(', ')})`);
      }
    }

    // Unchanged pages: 304 with no body after the first visit; without validators, the same payload counted unchanged.
    const never = of('/never');
    assert.ok(never.length >= 3, `/never visited ${never.length} times`);
    assert.deepEqual(never.slice(1).map((s) => s.status), never.slice(1).map(() => 304));
    const t = result.stats.totals.revisits;
    assert.ok(t.notModified >= never.length - 1 && t.unchanged >= of('/plain').length - 1, JSON.stringify(t));
    assert.ok(t.changed >= 5, `changes found: ${t.changed}`);

    // Gone: visited goneAfter (2) more times after its first 404, then dropped, and counted.
    const missing = of('/gone').filter((s) => s.status === 404);
    assert.equal(missing.length, 3, `/gone answered 404 to ${missing.length} visits`);
    assert.equal(t.gone, 1);

    // The visits went mostly to the pages that change.
    const revisited = seen.filter((s) => s.t > 2000);
    const share = revisited.filter((s) => s.path === '/fast' || s.path === '/slow').length / revisited.length;
    assert.ok(share > 0.5, `share of visits on the changing pages: ${share.toFixed(2)} of ${revisited.length}`);

    // Stopped by the signal: nothing leased, and every kept URL (all but /gone) waits for its next visit.
    const stats = await new FairQueue(world.redis).stats('revisit');
    assert.deepEqual([stats.leased, stats.queued + stats.delayed, stats.dead], [0, 5, 0]);

    // Each output line of a revisit says what it found.
    const lines = await readJsonl(out);
    const notModifiedLines = lines.filter((l) => l.revisit?.notModified);
    assert.ok(notModifiedLines.length >= never.length - 1 && notModifiedLines.every((l) => l.status === 304 && l.links === 0), JSON.stringify(notModifiedLines.slice(0, 2)));
    assert.ok(lines.some((l) => l.url.endsWith('/fast') && l.revisit?.changed === true && l.revisit.visit > 1));
    process.stdout.write(`# ${seen.length} requests in ${RUN_MS / 1000} s; visits of the changing pages: ${(share * 100).toFixed(0)} %; ${JSON.stringify(t)}\n`);
  });

  it('with --warc, a 304 and a 200 with the payload archived before are revisit records (server-not-modified, identical-payload-digest) pointing at a capture that exists, read back by an independent reader', async () => {
    const t0 = performance.now();
    const etagged: Handler = (req, res) => {
      const etag = `"v${Math.floor((performance.now() - t0) / 3000)}"`;
      if (req.headers['if-none-match'] === etag) {
        res.writeHead(304, { etag });
        res.end();
        return;
      }
      res.writeHead(200, { 'content-type': 'text/html', etag });
      res.end(html(`version ${etag}`));
    };
    // /same: the same payload every time, and no validators: every revisit is a 200 carrying it again.
    const site = await world.web.site('archived', { '/': html('<a href="/p">p</a> <a href="/same">same</a>'), '/p': etagged, '/same': html('the same, every time') });
    const seed = validateSeed({
      arena: 'revisit-warc',
      rateLimits: { [site.key]: RATE },
      start: [`${site.origin}/`],
      revisit: { minIntervalSeconds: 1, initialIntervalSeconds: 1, maxIntervalSeconds: 2 },
      allowPrivateNetworks: true,
    });
    const dir = world.file('warc-revisits');
    const out = world.file('warc-revisits.jsonl');
    await runCrawl(world.redis, seed, { workers: 1, concurrency: 2, signal: AbortSignal.timeout(9000), warc: { dir }, out });
    const records: WarcRecordRead[] = [];
    for (const f of await readdir(dir)) if (f.endsWith('.warc.gz')) records.push(...(await readWarcFile(join(dir, f))).records);
    const captures = records.filter((r) => r.header('WARC-Type') === 'response');
    const revisits = records.filter((r) => r.header('WARC-Type') === 'revisit');
    const notModified = revisits.filter((r) => r.header('WARC-Profile') === 'http://netpreserve.org/warc/1.1/revisit/server-not-modified');
    const identical = revisits.filter((r) => r.header('WARC-Profile') === 'http://netpreserve.org/warc/1.1/revisit/identical-payload-digest');
    assert.ok(notModified.length >= 2 && identical.length >= 2, `${notModified.length} not-modified and ${identical.length} identical-payload revisit records`);
    assert.equal(notModified.length + identical.length, revisits.length);
    for (const r of revisits) {
      const target = r.header('WARC-Refers-To-Target-URI');
      const date = r.header('WARC-Refers-To-Date');
      assert.equal(target, r.header('WARC-Target-URI'));
      const original = captures.find((c) => c.header('WARC-Target-URI') === target && c.header('WARC-Date') === date);
      assert.ok(original, `the capture of ${target} at ${date} is in the archive`);
      assert.match(original.block.toString('latin1'), /^HTTP\/1\.1 200 /);
      if (identical.includes(r)) {
        // Headers only, and the payload digest of the capture it stands for.
        assert.match(r.block.toString('latin1'), /^HTTP\/1\.1 200 [^]*\r\n\r\n$/);
        assert.equal(r.header('WARC-Payload-Digest'), original.header('WARC-Payload-Digest'));
      } else {
        assert.match(r.block.toString('latin1'), /^HTTP\/1\.1 304 /);
      }
    }
    assert.equal(captures.filter((c) => c.header('WARC-Target-URI')?.endsWith('/same')).length, 1, '/same archived once, revisited after');
    // The lines say where each record is, and when it was taken.
    const lines = (await readJsonl(out)).filter((l) => l.status === 304);
    assert.ok(lines.length === notModified.length && lines.every((l) => typeof l.warc?.date === 'string'));
  });

  it('a sitemap is read again on its schedule: 304 while it stands, and a URL added to it later is found and fetched', async () => {
    const t0 = performance.now();
    const hits: { path: string; status: number }[] = [];
    const sitemap: Handler = (req, res) => {
      const grown = performance.now() - t0 > 3000;
      const etag = grown ? '"s2"' : '"s1"';
      const status = req.headers['if-none-match'] === etag ? 304 : 200;
      hits.push({ path: '/sitemap.xml', status });
      const urls = (grown ? ['/a', '/b'] : ['/a']).map((p) => `<url><loc>${site.origin}${p}</loc></url>`).join('');
      res.writeHead(status, { 'content-type': 'application/xml', etag });
      res.end(status === 304 ? undefined : `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${urls}</urlset>`);
    };
    const leaf = (path: string): Handler => (_req, res) => {
      hits.push({ path, status: 200 });
      res.writeHead(200, { 'content-type': 'text/html', etag: `"${path}"` });
      res.end(html(path));
    };
    const site = await world.web.site('mapped', { '/': html('home'), '/sitemap.xml': sitemap, '/a': leaf('/a'), '/b': leaf('/b') });
    const seed = validateSeed({
      arena: 'revisit-sitemap',
      rateLimits: { [site.key]: RATE },
      start: [`${site.origin}/`],
      sitemaps: [`${site.origin}/sitemap.xml`],
      revisit: { minIntervalSeconds: 1, initialIntervalSeconds: 1, maxIntervalSeconds: 2 },
      allowPrivateNetworks: true,
    });
    await runCrawl(world.redis, seed, { workers: 1, concurrency: 2, signal: AbortSignal.timeout(9000) });
    const reads = hits.filter((h) => h.path === '/sitemap.xml');
    assert.ok(reads.length >= 4 && reads.some((h) => h.status === 304), `sitemap read ${reads.length} times: ${reads.map((h) => h.status).join(' ')}`);
    assert.ok(hits.some((h) => h.path === '/b'), '/b, added to the sitemap after 3 s, found and fetched');
  });
});
