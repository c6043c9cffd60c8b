/** URL normalisation. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { normalizeUrl } from '../../src/crawl/urls/normalize.js';
describe('URL normalisation', () => {
  it('normalises as documented and is idempotent', () => {
    const cases: [string, string | null][] = [
      ['HTTP://Example.COM:80/a/./b/../c?%7euser=%41&b=2#frag', 'http://example.com/a/c?~user=A&b=2'],
      ['https://user:pw@bücher.de/%e2%82%ac/', 'https://xn--bcher-kva.de/%E2%82%AC/'],
      ['http://a.com', 'http://a.com/'],
      ['http://a.com/x#', 'http://a.com/x'],
      ['http://a.com/x?#', 'http://a.com/x?'],
      ['https://a.com:443/x?b=2&a=1', 'https://a.com/x?b=2&a=1'],
      ['mailto:x@y', null],
      ['javascript:alert(1)', null],
      ['ftp://a.com/', null],
      ['not a url', null],
      ['http://a{b}.com/', null],
      ['http://a_b.example/x', 'http://a_b.example/x'],
      [`http://a.com/${'x'.repeat(9000)}`, null],
    ];
    for (const [input, want] of cases) {
      const got = normalizeUrl(input);
      assert.equal(got, want, input);
      if (got) assert.equal(normalizeUrl(got), got, `idempotent: ${got}`);
    }
    assert.equal(normalizeUrl('../up?x', 'http://a.com/dir/sub/'), 'http://a.com/dir/up?x');
  });
});
