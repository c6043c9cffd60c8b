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
import { html, smallestGap } from '../helpers/web.js';
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
    assert.equal(line('/p/1')?.depth, 0);
    assert.equal(line('/p/1')?.referrer, `${site.origin}/sm/pages.xml`);
    assert.deepEqual(line('/sm/pages.xml')?.sitemap, { format: 'urlset', urls: 6, sitemaps: 0, ignored: 0, truncated: false });
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
    for (const f of await readdir(warc)) {
      for (const r of (await readWarcFile(join(warc, f))).records) if (r.header('WARC-Type') === 'response') archived.add(new URL(r.header('WARC-Target-URI') as string).pathname);
    }
    for (const p of ['/robots.txt', '/sitemap-index.xml', '/sm/pages.xml', '/sm/more.xml.gz', '/sm/list.txt', '/sm/deep1.xml', '/sm/deep2.xml', '/sm/deep3.xml']) assert.ok(archived.has(p), `${p} archived`);

    // Sitemaps take the domain's rate slots like pages: judged from the site's own log.
    const gap = smallestGap(log);
    assert.ok(gap >= 1000 / RATE, `smallest gap ${gap.toFixed(1)} ms at ${RATE}/s`);
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
  });
});
