/** A queued URL: named fields in the crawler, the short stored form in Redis, and nothing else reading that form. */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { decodeItem, encodeItem, queuedUrl } from '../../src/crawl/store/item.js';

describe('queued URL', () => {
  it('round-trips, storing only the short keys and leaving defaults out', () => {
    const page = queuedUrl('http://a.test/x', { depth: 2, referrer: 'http://a.test/', lastmod: '2026-01-01' });
    assert.equal(encodeItem(page), '{"u":"http://a.test/x","d":2,"r":"http://a.test/","h":0,"m":"2026-01-01"}');
    assert.deepEqual(decodeItem(encodeItem(page)), page);
    const sitemap = queuedUrl('http://a.test/s.xml', { sitemapLevel: 1, hops: 1, paced: 2 });
    assert.equal(encodeItem(sitemap), '{"u":"http://a.test/s.xml","d":0,"r":null,"h":1,"p":2,"k":"s","n":1}');
    assert.deepEqual(decodeItem(encodeItem(sitemap)), sitemap);
  });

  it('carries a visit record as one array, and a malformed record reads as none (the URL is visited as new)', () => {
    const visit = { at: 1_700_000_000_000, status: 200, etag: '"v1"', lastModified: null, digest: 'abc', capturedAt: 1_700_000_000_000, intervalS: 1.5, visits: 3, changes: 1, gone: 0, warcDigest: null };
    const page = queuedUrl('http://a.test/x', { visit });
    assert.equal(encodeItem(page), '{"u":"http://a.test/x","d":0,"r":null,"h":0,"w":[1700000000000,200,"\\"v1\\"",null,"abc",1700000000000,1.5,3,1,0,null]}');
    assert.deepEqual(decodeItem(encodeItem(page)), page);
    assert.equal(decodeItem('{"u":"http://a.test/","d":0,"r":null,"h":0,"w":[1,2]}')?.visit, null);
    assert.equal(decodeItem('{"u":"http://a.test/","d":0,"r":null,"h":0,"w":"x"}')?.visit, null);
  });

  it('reads what earlier releases stored, and refuses what weir did not write', () => {
    assert.deepEqual(decodeItem('{"u":"http://a.test/","d":0,"r":null,"h":0,"k":"s"}'), queuedUrl('http://a.test/', { sitemapLevel: 0 }));
    for (const bad of ['', 'null', '[]', '{"u":1,"d":0,"h":0}', '{"u":"x","d":"0","h":0}', '{"d":0,"h":0}']) assert.equal(decodeItem(bad), null, bad);
  });

  it('no module but store/item.ts reads the stored keys', () => {
    const root = new URL('../../src/crawl/', import.meta.url).pathname;
    const readers = (readdirSync(root, { recursive: true }) as string[])
      .filter((f) => f.endsWith('.ts') && f !== join('store', 'item.ts'))
      .filter((f) => /\bitem\??\.[udrhpknm]\b/.test(readFileSync(join(root, f), 'utf8')));
    assert.deepEqual(readers, []);
  });
});
