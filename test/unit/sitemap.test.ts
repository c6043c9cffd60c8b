import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { SITEMAP_LIMITS, SitemapReader, type SitemapContents } from '../../src/crawl/links/sitemap.js';

async function read(body: Buffer, chunk = 16 * 1024): Promise<SitemapContents> {
  const r = new SitemapReader();
  for (let i = 0; i < body.length; i += chunk) if (!r.write(body.subarray(i, i + chunk))) break;
  return r.end();
}

const urlset = (n: number, from = 0): string =>
  `<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${Array.from({ length: n }, (_, i) => `<url><loc>https://a.test/p/${i + from}</loc><lastmod>2026-01-0${(i % 9) + 1}</lastmod></url>`).join('\n')}</urlset>`;

describe('sitemap reader', () => {
  it('reads a urlset with lastmod, an index, and a text sitemap, whatever the chunking', async () => {
    for (const chunk of [1, 7, 1 << 20]) {
      const u = await read(Buffer.from(`\uFEFF  ${urlset(3)}`), chunk);
      assert.equal(u.format, 'urlset');
      assert.deepEqual(u.urls, [
        { loc: 'https://a.test/p/0', lastmod: '2026-01-01' },
        { loc: 'https://a.test/p/1', lastmod: '2026-01-02' },
        { loc: 'https://a.test/p/2', lastmod: '2026-01-03' },
      ]);
      const idx = await read(Buffer.from('<sm:sitemapindex xmlns:sm="http://www.sitemaps.org/schemas/sitemap/0.9"><sm:sitemap><sm:loc> https://a.test/s1.xml </sm:loc></sm:sitemap><sm:sitemap><sm:loc>https://a.test/s2.xml?a=1&amp;b=2</sm:loc></sm:sitemap></sm:sitemapindex>'), chunk);
      assert.equal(idx.format, 'sitemapindex');
      assert.deepEqual(idx.sitemaps.map((s) => s.loc), ['https://a.test/s1.xml', 'https://a.test/s2.xml?a=1&b=2']);
      const text = await read(Buffer.from('https://a.test/x\r\nnot a url\n\nhttps://a.test/é\nhttps://a.test/last'), chunk);
      assert.equal(text.format, 'text');
      assert.deepEqual(text.urls.map((e) => e.loc), ['https://a.test/x', 'https://a.test/é', 'https://a.test/last']);
    }
  });

  it('undoes gzip by its magic bytes', async () => {
    const r = await read(gzipSync(urlset(5)));
    assert.equal(r.urls.length, 5);
    assert.equal(r.truncated, false);
  });

  it('keeps 50,000 entries of a file and counts the rest as ignored', async () => {
    const r = await read(Buffer.from(urlset(SITEMAP_LIMITS.maxEntries + 123)));
    assert.equal(r.urls.length, SITEMAP_LIMITS.maxEntries);
    assert.equal(r.ignored, 123);
  });

  it('cuts a gzip bomb at 50 MiB uncompressed, in bounded time and memory', async () => {
    const bomb = gzipSync(Buffer.alloc(1024 * 1024 * 1024 / 8), { level: 9 });
    // 128 MiB of zeros in ~130 KiB, then the same again: far over the limit.
    const started = performance.now();
    const before = process.memoryUsage().rss;
    const r = await read(Buffer.concat([bomb, bomb]));
    assert.equal(r.truncated, true);
    assert.equal(r.urls.length, 0);
    assert.ok(performance.now() - started < 20_000);
    assert.ok(process.memoryUsage().rss - before < 200 * 1024 * 1024, 'no inflated copy kept');
  });

  it('never expands entities: a billion-laughs sitemap is read as text, quickly', async () => {
    const lol = [
      '<?xml version="1.0"?>',
      '<!DOCTYPE lolz [<!ENTITY lol "lol">',
      ...Array.from({ length: 9 }, (_, i) => `<!ENTITY lol${i + 1} "${`&lol${i === 0 ? '' : i};`.repeat(10)}">`),
      ']>',
      '<urlset><url><loc>https://a.test/&lol9;</loc></url><url><loc>https://a.test/ok</loc></url></urlset>',
    ].join('\n');
    const started = performance.now();
    const r = await read(Buffer.from(lol));
    assert.ok(performance.now() - started < 1000);
    assert.deepEqual(r.urls.map((e) => e.loc), ['https://a.test/&lol9;', 'https://a.test/ok']);
    const ext = await read(Buffer.from('<?xml version="1.0"?><!DOCTYPE u [<!ENTITY x SYSTEM "file:///etc/passwd">]><urlset><url><loc>https://a.test/&x;</loc></url></urlset>'));
    assert.deepEqual(ext.urls.map((e) => e.loc), ['https://a.test/&x;'], 'an external entity is not resolved');
  });

  it('drops a <loc> or a line longer than a URL may be, without gathering it', async () => {
    const huge = 'a'.repeat(5 * 1024 * 1024);
    const xml = await read(Buffer.from(`<urlset><url><loc>https://a.test/${huge}</loc></url><url><loc>https://a.test/ok</loc></url></urlset>`));
    assert.deepEqual(xml.urls.map((e) => e.loc), ['https://a.test/ok']);
    assert.equal(xml.ignored, 1);
    const text = await read(Buffer.from(`https://a.test/${huge}\nhttps://a.test/ok\n`));
    assert.deepEqual(text.urls.map((e) => e.loc), ['https://a.test/ok']);
    assert.equal(text.ignored, 1);
  });

  it('keeps what came before a corrupt gzip stream', async () => {
    const gz = gzipSync(urlset(2));
    const r = await read(Buffer.concat([gz.subarray(0, gz.length - 12), Buffer.from('garbage!garbage!')]));
    assert.match(r.error ?? '', /gzip/);
  });
});
