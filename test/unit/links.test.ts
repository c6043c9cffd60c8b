/** Link extraction. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { extractLinks, headerNofollow } from '../../src/crawl/links/extract.js';
import { inFrontBand } from '../../src/crawl/links/enqueue.js';
import { queuedUrl } from '../../src/crawl/store/item.js';
describe('link extraction', () => {
  it('takes a/area hrefs, skips script/style/textarea/iframe/comments and dropped schemes, reads base, title and meta robots', () => {
    const page = extractLinks(`<html><head><title> A  &amp; B </title><meta name="robots" content="noindex, nofollow"></head><body>
      <a href="/x">x</a><area href="/y"><a href="mailto:a@b">m</a><a href="javascript:1">j</a><a href="data:,x">d</a>
      <script>var s = '<a href="/in-script">';</script><style>a[href="/in-style"]{}</style>
      <textarea><a href="/in-textarea"></a></textarea><iframe><a href="/in-iframe"></a></iframe>
      <!-- <a href="/in-comment"> --><noscript><a href="/in-noscript">n</a></noscript>
      <a rel="nofollow sponsored" href="/nf">nf</a><base href="/base/"></body></html>`);
    assert.deepEqual(page.hrefs, ['/x', '/y', '/in-noscript']);
    assert.deepEqual(page.nofollowHrefs, ['/nf']);
    assert.equal(page.base, '/base/');
    assert.equal(page.title, 'A & B');
    assert.equal(page.metaNofollow, true);
  });

  it('reads X-Robots-Tag nofollow for all agents or ours only', () => {
    assert.equal(headerNofollow('noindex, nofollow'), true);
    assert.equal(headerNofollow('none'), true);
    assert.equal(headerNofollow('otherbot: nofollow'), false);
    assert.equal(headerNofollow(['weir: nofollow']), true);
    assert.equal(headerNofollow('unavailable_after: 2030-01-01'), false);
  });
});

describe('the front band', () => {
  it('takes sitemaps always, and pages up to priorityDepth when it is set', () => {
    const page = (depth: number) => queuedUrl('http://a.test/', { depth });
    assert.equal(inFrontBand(queuedUrl('http://a.test/s.xml', { sitemapLevel: 1, depth: 7 }), null), true);
    assert.equal(inFrontBand(page(0), null), false);
    assert.equal(inFrontBand(page(1), 1), true);
    assert.equal(inFrontBand(page(2), 1), false);
  });
});
