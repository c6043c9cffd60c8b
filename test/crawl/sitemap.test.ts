/**
 * Sitemaps in a crawl: pages reachable only through a robots.txt-listed
 * sitemap index (an XML sitemap, a gzipped one, a text one, nested indexes
 * and a loop), crawled once each, in scope, at the site's rate as the site
 * (in its own process) saw it.
 */
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { runCrawl } from '../../src/crawl/run.js';
import { validateSeed } from '../../src/crawl/seed/seed.js';
import { startSiteProcess, type SiteProcess } from '../helpers/site-process.js';
import { readWarcFile } from '../helpers/warc-reader.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { FixtureWeb, html, smallestGap } from '../helpers/web.js';
import { readJsonl, useCrawlWorld } from '../helpers/world.js';

const RATE = 10;
const SELF = '{{self}}';
const abs = (p: string): string => (p.startsWith('http') ? p : SELF + p);
const urlset = (paths: string[]): string =>
  `<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${paths.map((p) => `<url><loc>${abs(p)}</loc><lastmod>2026-11-0${p.length % 9}</lastmod></url>`).join('')}</urlset>`;
const index = (paths: string[]): string => `<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${paths.map((p) => `<sitemap><loc>${abs(p)}</loc></sitemap>`).join('')}</sitemapindex>`;

let site: SiteProcess | undefined;
const world = useCrawlWorld('sitemap');
after(async () => site?.close());

describe('sitemaps', () => {
  it('crawls pages reachable only through a robots.txt-listed sitemap index: xml, gzip, text, nested, looping', async (t) => {
    site = await startSiteProcess('S', {
      routes: {
        '/robots.txt': `User-agent: *\nDisallow: /private/\nSitemap: ${SELF}/sitemap-index.xml\n`,
        '/': html('home, no links'),
        // Lists itself (a loop), a sitemap outside every crawl domain, and a chain of indexes one too deep.
        '/sitemap-index.xml': index(['/sm/pages.xml', '/sm/more.xml.gz', '/sm/list.txt', '/sitemap-index.xml', '/sm/deep1.xml', 'http://192.0.2.1/outside.xml']),
        '/sm/pages.xml': urlset(['/p/1', '/p/2', '/p/3', '/private/secret', 'http://192.0.2.1/elsewhere', '/p/1']),
        // Gzipped, with relative locations (resolved against the sitemap's URL; the port is not known yet).
        '/sm/more.xml.gz': { type: 'application/x-gzip', base64: gzipSync(urlset(['/p/4', '/p/5']).replaceAll(SELF, '')).toString('base64') },
        '/sm/list.txt': `${SELF}/p/6\n${SELF}/p/7\n`,
        '/sm/deep1.xml': index(['/sm/deep2.xml']),
        '/sm/deep2.xml': index(['/sm/deep3.xml']),
        '/sm/deep3.xml': index(['/sm/deep4.xml']),
        '/sm/deep4.xml': urlset(['/p/too-deep']),
      },
      fallback: html('a page'),
    });
    const seed = validateSeed({ arena: 'sitemaps', rateLimits: { [site.key]: RATE }, start: [`${site.origin}/`], maxInFlightPerDomain: 2, allowPrivateNetworks: true });
    const out = world.file('sitemaps.jsonl');
    const warc = world.file('sitemaps-warc');
    const result = await runCrawl(world.redis, seed, { workers: 2, concurrency: 2, out, warc: { dir: warc } });
    const log = await site.log();
    const fetched = log.map((r) => r.path);
    t.diagnostic(fetched.join(' '));
    for (const p of ['/p/1', '/p/2', '/p/3', '/p/4', '/p/5', '/p/6', '/p/7']) assert.equal(fetched.filter((f) => f === p).length, 1, `${p} crawled once`);
    for (const p of ['/sitemap-index.xml', '/sm/pages.xml', '/sm/more.xml.gz', '/sm/list.txt', '/sm/deep1.xml', '/sm/deep2.xml', '/sm/deep3.xml']) assert.equal(fetched.filter((f) => f === p).length, 1, `${p} read once`);
    assert.ok(!fetched.includes('/sm/deep4.xml'), 'an index nested past 3 levels is not followed');
    assert.ok(!fetched.includes('/private/secret'), 'robots.txt applies to sitemap URLs');
    assert.equal(fetched.length, 1 + 1 + 7 + 7, 'robots.txt, /, 7 sitemaps, 7 pages: nothing else');

    const lines = await readJsonl(out);
    const line = (p: string) => lines.find((l) => l.url === `${site?.origin}${p}`);
    assert.equal(line('/p/1')?.lastmod, '2026-11-04');
    assert.equal(line('/p/1')?.depth, 1, 'found through robots.txt: one step from the site');
    assert.equal(line('/p/1')?.referrer, `${site.origin}/sm/pages.xml`);
    assert.deepEqual(line('/sm/pages.xml')?.sitemap, { format: 'urlset', urls: 6, sitemaps: 0, ignored: 1, truncated: false }, 'the entry on another host');
    assert.deepEqual(line('/sm/more.xml.gz')?.sitemap, { format: 'urlset', urls: 2, sitemaps: 0, ignored: 0, truncated: false });
    assert.deepEqual(line('/sm/list.txt')?.sitemap, { format: 'text', urls: 2, sitemaps: 0, ignored: 0, truncated: false });
    assert.equal(line('/sitemap-index.xml')?.sitemap?.ignored, 1, 'the sitemap outside every domain');
    assert.equal(line('/sm/deep3.xml')?.sitemap?.ignored, 1, 'the index one level too deep');
    assert.equal(line('/private/secret')?.error, 'disallowed by robots.txt');
    assert.equal(result.stats.totals.sitemaps, 7);
    // p/1 twice in one file counts once; /private/secret is in scope (robots.txt decides later).
    assert.equal(result.stats.totals.sitemapUrls, 4 + 2 + 2);
    assert.equal(result.stats.totals.pages, 8);

    // Every sitemap fetch is in the WARC files too.
    const archived = new Set<string>();
    for (const f of (await readdir(warc)).filter((n) => n.endsWith('.warc.gz'))) {
      for (const r of (await readWarcFile(join(warc, f))).records) if (r.header('WARC-Type') === 'response') archived.add(new URL(r.header('WARC-Target-URI') as string).pathname);
    }
    for (const p of ['/robots.txt', '/sitemap-index.xml', '/sm/pages.xml', '/sm/more.xml.gz', '/sm/list.txt', '/sm/deep1.xml', '/sm/deep2.xml', '/sm/deep3.xml']) assert.ok(archived.has(p), `${p} archived`);

    // Sitemaps take the domain's rate slots like pages: judged from the site's own log.
    const gap = smallestGap(log);
    assert.ok(gap >= 1000 / RATE, `smallest gap ${gap.toFixed(1)} ms at ${RATE}/s`);
  });

  it("a sitemap found late goes to its queue's front band: read before the pages already queued, not after them", async () => {
    // robots.txt lists an index, and the home page 40 pages: the index's child sitemap is found after those
    // 40 are queued. One request at a time, so the site sees the queue's order.
    const pages = Array.from({ length: 40 }, (_, i) => `/d${i}`);
    const routes: Record<string, string> = {
      '/robots.txt': `User-agent: *\nSitemap: {{self}}/index.xml\n`,
      '/': html(pages.map((p) => `<a href="${p}">${p}</a>`).join(' ')),
      '/index.xml': index(['/child.xml']).replaceAll(SELF, '{{self}}'),
      '/child.xml': urlset(['/s1']).replaceAll(SELF, '{{self}}'),
      '/s1': html('from the sitemap'),
    };
    for (const p of pages) routes[p] = html('deep');
    const band = await world.web.site('band', routes);
    const seed = validateSeed({ arena: 'sitemap-band', rateLimits: { [band.key]: 'unlimited' }, maxInFlightPerDomain: 1, start: [`${band.origin}/`], allowPrivateNetworks: true });
    await runCrawl(world.redis, seed, { workers: 1, concurrency: 1 });
    const order = world.web.of('band').map((r) => r.path);
    assert.equal(order.length, 1 + 1 + 2 + 1 + 40, 'robots.txt, the home page, two sitemaps and 41 pages');
    const firstPage = order.indexOf('/d0');
    assert.ok(order.indexOf('/child.xml') < firstPage + 5, `the child sitemap came ${order.indexOf('/child.xml') - firstPage} requests after the first of the 40 pages queued before it: ${order.join(' ')}`);
  });

  it('reads no sitemap with sitemaps: false, and a seed-listed one with a list', async () => {
    assert.ok(site);
    const off = validateSeed({ arena: 'sitemaps-off', rateLimits: { [site.key]: 'unlimited' }, start: [`${site.origin}/`], allowPrivateNetworks: true, sitemaps: false });
    const r1 = await runCrawl(world.redis, off, { workers: 1, concurrency: 2 });
    assert.equal(r1.stats.totals.sitemaps, 0);
    assert.equal(r1.stats.totals.pages, 1);
    const listed = validateSeed({ arena: 'sitemaps-list', rateLimits: { [site.key]: 'unlimited' }, start: [`${site.origin}/`], allowPrivateNetworks: true, sitemaps: [`${site.origin}/sm/list.txt`] });
    const r2 = await runCrawl(world.redis, listed, { workers: 1, concurrency: 2 });
    // The seed's sitemap and robots.txt's index (and all it leads to).
    assert.equal(r2.stats.totals.sitemaps, 7);
    assert.equal(r2.stats.totals.pages, 8);
    const raw = { arena: 'x', rateLimits: { [site.key]: 1 }, start: [`${site.origin}/`] };
    assert.throws(() => validateSeed({ ...raw, sitemaps: ['ftp://x/'] }), /seed field sitemaps\[0\]: is not an absolute http/);
    assert.throws(() => validateSeed({ ...raw, sitemaps: ['http://192.0.2.1/s.xml'] }), /seed field sitemaps\[0\]: .* is not inside any domain/);
    assert.throws(() => validateSeed({ ...raw, sitemaps: 'yes' }), /seed field sitemaps: must be true, false or a list/);
    assert.throws(() => validateSeed({ ...raw, maxSitemaps: -1 }), /seed field maxSitemaps/);
  });

  it("a sitemap lists pages of its own host only, unless the other host's robots.txt names it; maxDepth and maxSitemaps hold", async () => {
    // Three sites on loopback (another port is another host), all in the crawl's scope: A's sitemap plants URLs on B and C.
    // B's robots.txt names a sitemap that lives on A (a cross submit): that one may list B's pages.
    const web = new FixtureWeb();
    try {
      const origins: Record<string, string> = {};
      // (urlset() puts {{self}} before a path; here every location names its site.)
      const fill = (text: string): string => text.replaceAll(SELF, '').replace(/\{\{([ABC])\}\}/g, (_m, n: string) => origins[n] ?? '');
      const xml = (body: () => string) => (_req: IncomingMessage, res: ServerResponse) => {
        res.writeHead(200, { 'content-type': 'application/xml' });
        res.end(fill(body()));
      };
      const robots = (text: string) => (_req: IncomingMessage, res: ServerResponse) => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end(fill(text));
      };
      const routes = (name: string) => ({
        '/robots.txt': robots(name === 'A' ? 'Sitemap: {{A}}/sitemap.xml\n' : name === 'B' ? 'Sitemap: {{A}}/for-b.xml\n' : 'Sitemap: {{C}}/m/1.xml\n'),
        '/': html(`${name} home`),
        '/sitemap.xml': xml(() => urlset(['{{A}}/a/1', '{{B}}/planted-by-A', '{{C}}/victim'])),
        '/for-b.xml': xml(() => urlset(['{{B}}/b/1', '{{C}}/victim-2'])),
        '/index-many.xml': xml(() => index(['{{C}}/m/1.xml', '{{C}}/m/1.xml', '{{C}}/m/2.xml', '{{C}}/m/3.xml', '{{C}}/m/4.xml', '{{C}}/m/5.xml'])),
      });
      const fallback = xml(() => urlset([]));
      for (const name of ['A', 'B', 'C']) origins[name] = (await web.site(name, routes(name), fallback)).origin;
      const sites = [...web.sites.values()];
      const rateLimits = Object.fromEntries(sites.map((s) => [s.key, 'unlimited']));
      const seed = validateSeed({ arena: 'sitemap-hosts', rateLimits, start: [`${origins.A}/`, `${origins.B}/`], allowPrivateNetworks: true });
      await runCrawl(world.redis, seed, { workers: 1, concurrency: 2 });
      const paths = (site: string) => web.of(site).map((r) => r.path);
      assert.ok(paths('A').includes('/a/1'), "A's sitemap lists A's page");
      assert.ok(!paths('B').includes('/planted-by-A'), `A's sitemap may not speak for B: ${paths('B').join(' ')}`);
      assert.deepEqual(paths('C'), [], 'nor for C: C is never asked for anything');
      assert.ok(paths('A').includes('/for-b.xml') && paths('B').includes('/b/1'), "B's robots.txt vouches for the sitemap on A: it may list B's pages");

      // maxDepth 0: only the start URLs; sitemaps found through robots.txt would give depth-1 pages, so none is read.
      const shallow = validateSeed({ arena: 'sitemap-depth0', rateLimits, start: [`${origins.A}/`], maxDepth: 0, allowPrivateNetworks: true });
      const before = web.of('A').length;
      const r = await runCrawl(world.redis, shallow, { workers: 1, concurrency: 2 });
      const fetched = web.of('A').slice(before).map((x) => x.path);
      assert.deepEqual(fetched.sort(), ['/', '/robots.txt'], `maxDepth 0 fetches only the start URL (and robots.txt): ${fetched.join(' ')}`);
      assert.equal(r.stats.totals.sitemaps, 0);

      // maxSitemaps: an index listing 5 sitemaps, with a budget of 2, has 2 of them read. It
      // lists the first twice, and C's robots.txt names it too: a sitemap already found costs
      // no second place (the budget counted before dedupe read only /m/1 here).
      const budget = validateSeed({ arena: 'sitemap-budget', rateLimits, start: [`${origins.C}/`], sitemaps: [`${origins.C}/index-many.xml`], maxSitemaps: 2, allowPrivateNetworks: true });
      const rb = await runCrawl(world.redis, budget, { workers: 1, concurrency: 2 });
      assert.equal(rb.stats.totals.sitemaps, 1 + 2, 'the seed-listed index (not counted) and 2 of its 5');
      assert.equal(web.of('C').filter((x) => x.path.startsWith('/m/')).length, 2);
    } finally {
      await web.close();
    }
  });
});
