/** Domain keys and matching. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DomainMatcher, parseDomainKey, type DomainKey } from '../../src/crawl/domains.js';
describe('domain keys', () => {
  it('lowercases, punycodes IDNs, brackets IPv6, keeps ports', () => {
    const k = (s: string): string => (parseDomainKey(s) as DomainKey).key;
    assert.equal(k('GitHub.COM'), 'github.com');
    assert.equal(k('bücher.de'), 'xn--bcher-kva.de');
    assert.equal(k('[::1]:8080'), '[::1]:8080');
    assert.equal(k('127.0.0.1:18001'), '127.0.0.1:18001');
  });

  it('matches subdomains, ports only when named, and the longest key', () => {
    const m = new DomainMatcher(['wikipedia.org', 'en.wikipedia.org', 'example.com:8080', '[::1]:9000'].map((s) => parseDomainKey(s) as DomainKey));
    const q = (u: string): string | undefined => m.match(new URL(u))?.key;
    assert.equal(q('https://www.wikipedia.org/'), 'wikipedia.org');
    assert.equal(q('https://de.wikipedia.org:8443/x'), 'wikipedia.org');
    assert.equal(q('https://en.wikipedia.org/wiki'), 'en.wikipedia.org');
    assert.equal(q('https://notwikipedia.org/'), undefined);
    assert.equal(q('http://example.com:8080/'), 'example.com:8080');
    assert.equal(q('http://example.com/'), undefined);
    assert.equal(q('http://[::1]:9000/'), '[::1]:9000');
  });
});
