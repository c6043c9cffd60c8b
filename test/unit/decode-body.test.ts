/**
 * decodeBody: UTF-8 goes through V8's decoder (Buffer#toString), other
 * charsets through TextDecoder; the text must be exactly what TextDecoder
 * (the WHATWG decoder) makes of the same bytes, bad bytes and BOM included.
 * pageText: a UTF-8 page is tokenized as its bytes (latin1) and only the
 * ranges kept are decoded; the links and title must be exactly those of
 * the decoded text, on any markup.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { decodeBody, pageText } from '../../src/crawl/fetch/index.js';
import { extractLinks, extractLinksAsync } from '../../src/crawl/links/index.js';

describe('decodeBody', () => {
  it('UTF-8 (by header, by <meta>, by default) decodes exactly as TextDecoder does, on any bytes', () => {
    const utf8ish = fc.array(fc.oneof(fc.integer({ min: 0, max: 255 }), fc.constantFrom(0xef, 0xbb, 0xbf, 0xc3, 0xe2, 0xf0, 0x80, 0xed, 0xa0)), { maxLength: 64 });
    fc.assert(
      fc.property(utf8ish, fc.constantFrom('text/html; charset=utf-8', 'text/html; charset=UTF8', 'text/html', null), (bytes, type) => {
        const body = Buffer.from(bytes);
        assert.equal(decodeBody(body, type), new TextDecoder('utf-8').decode(body));
      }),
      { numRuns: 2000 },
    );
    const bom = Buffer.from([0xef, 0xbb, 0xbf, 0x68, 0x69]);
    assert.equal(decodeBody(bom, 'text/html'), 'hi', 'a byte-order mark is dropped');
    assert.equal(decodeBody(Buffer.from('<meta charset="utf-8">é'), null), '<meta charset="utf-8">é');
  });

  it('other charsets through TextDecoder; an unknown one as UTF-8', () => {
    assert.equal(decodeBody(Buffer.from([0xe9]), 'text/html; charset=iso-8859-1'), 'é');
    assert.equal(decodeBody(Buffer.from([0x82, 0xa0]), 'text/html; charset=shift_jis'), 'あ');
    assert.equal(decodeBody(Buffer.from('é'), 'text/html; charset=no-such-charset'), 'é');
  });
});

describe('pageText', () => {
  const fragment = fc.oneof(
    fc.constantFrom('<a href="', '">', '</a>', '<title>', '</title>', '<base href="', '<a rel="nofollow" href=', '&amp;', '&eacute;', '&#x1F600;', ' ', '"', "'", '<', '>', '=', '<meta name="robots" content="nofollow">', '<svg>', '</svg>', '<script>', '</script>'),
    fc.string({ unit: 'binary', maxLength: 6 }),
    fc.constantFrom('é', 'ü', '€', '日本', '😀', '\u00a0', '\ufffd', '/wiki/Café', '?q=naïve'),
  );
  const markup = fc.array(fragment, { maxLength: 40 }).map((parts) => parts.join(''));

  it('a UTF-8 page read as bytes gives exactly the links and title of its decoded text', async () => {
    await fc.assert(
      fc.asyncProperty(markup, fc.boolean(), async (html, bom) => {
        const body = Buffer.concat([bom ? Buffer.from([0xef, 0xbb, 0xbf]) : Buffer.alloc(0), Buffer.from(html)]);
        const page = pageText(body, 'text/html; charset=utf-8');
        assert.deepEqual(await extractLinksAsync(page.markup, 'weir', page.text), extractLinks(html));
        assert.equal(page.whole(), html);
      }),
      { numRuns: 1500 },
    );
  });

  it('another charset is decoded whole first', async () => {
    const body = Buffer.from('<title>caf\xe9</title><a href="/caf\xe9">x</a>', 'latin1');
    const page = pageText(body, 'text/html; charset=iso-8859-1');
    const links = await extractLinksAsync(page.markup, 'weir', page.text);
    assert.equal(links.title, 'café');
    assert.deepEqual(links.hrefs, ['/café']);
  });
});
