/** Domain keys and matching. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { isIP } from 'node:net';
import { domainToASCII } from 'node:url';
import { DomainMatcher, hostAndPort, nameFlaws, newDomainKey, parseDomainKey, type DomainKey } from '../../src/crawl/urls/domains.js';
describe('domain keys', () => {
  it('lowercases, punycodes IDNs, brackets IPv6, keeps ports', () => {
    const k = (s: string): string => (parseDomainKey(s) as DomainKey).key;
    assert.equal(k('GitHub.COM'), 'github.com');
    assert.equal(k('bücher.de'), 'xn--bcher-kva.de');
    assert.equal(k('[::1]:8080'), '[::1]:8080');
    assert.equal(k('127.0.0.1:18001'), '127.0.0.1:18001');
  });

  it('a host name is keyed as domainToASCII gives it, also where parsing skips it (names ending in a number, punycode, upper case, IPv4 forms, underscores, labels of 63 bytes and more)', () => {
    const label = fc.stringMatching(/^(?:[a-zA-Z0-9-]{1,6}|xn--[a-z0-9-]{0,6}|0x[0-9a-fA-F]{0,3}|\d{1,4}|ü[a-z]{0,3}|[a-z_]{1,3}|[a-z]{62,65})$/);
    fc.assert(
      fc.property(fc.array(label, { minLength: 1, maxLength: 5 }), (labels) => {
        const name = labels.join('.');
        if (isIP(name) !== 0) return;
        const want = domainToASCII(name.toLowerCase());
        const valid = want !== '' && /^[a-z0-9-]+(\.[a-z0-9-]+)*$/.test(want) && want.split('.').every((l) => l.length <= 63 && !l.startsWith('-') && !l.endsWith('-'));
        const got = parseDomainKey(name);
        assert.equal(typeof got === 'string' ? null : got.host, valid ? want : null, name);
      }),
      { numRuns: 5000, seed: 33 },
    );
  });

  it('nameFlaws finds what the regular expressions it replaced find (empty labels, hyphens at either end, labels of 64 and more, other characters)', () => {
    const part = fc.stringMatching(/^(?:[a-z0-9]{0,4}|-|\.|\.\.|[a-z]{60,66}|[A-Z_ü]|-[a-z]{1,2}-)$/);
    fc.assert(
      fc.property(fc.array(part, { maxLength: 8 }), (parts) => {
        const name = parts.join('');
        const ascii = /^[a-z0-9-]+(\.[a-z0-9-]+)*$/.test(name);
        const badLabel = /(?:^|\.)-|-(?:\.|$)|[^.]{64}/.test(name);
        // (BAD_LABEL is told only of names of ASCII labels, as the regular expression was only tried on those.)
        assert.deepEqual([(nameFlaws(name) & 1) === 0, ascii ? (nameFlaws(name) & 2) !== 0 : null], [ascii, ascii ? badLabel : null], JSON.stringify(name));
      }),
      { numRuns: 5000, seed: 58 },
    );
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

describe('domain matcher index', () => {
  /** The rule as first written: keys longest first, the first whose host is the URL's host or a parent of it (names only), port agreeing. */
  function linear(keys: DomainKey[], url: URL): string | null {
    const { host, port } = hostAndPort(url);
    for (const k of [...keys].sort((a, b) => b.key.length - a.key.length)) {
      if (k.port !== null && k.port !== port) continue;
      if (host === k.host || (isIP(k.host) === 0 && host.endsWith(`.${k.host}`))) return k.key;
    }
    return null;
  }

  it('finds what a scan over every key finds, for random keys and hosts', () => {
    const label = fc.constantFrom('a', 'b', 'ex', 'org', '0', '1', '127');
    const host = fc.array(label, { minLength: 1, maxLength: 4 }).map((l) => l.join('.'));
    const port = fc.constantFrom('', ':80', ':8080', ':443');
    fc.assert(
      fc.property(fc.array(fc.tuple(host, port), { maxLength: 12 }), host, port, fc.constantFrom('http', 'https'), (keys, h, p, scheme) => {
        const parsed = [...new Set(keys.map(([kh, kp]) => kh + kp))].map((k) => parseDomainKey(k)).filter((k): k is DomainKey => typeof k !== 'string');
        let url: URL;
        try {
          url = new URL(`${scheme}://${h}${p}/`);
        } catch {
          return; // a host ending in a number that is no IPv4 address: not a URL
        }
        assert.equal(new DomainMatcher(parsed).match(url)?.key ?? null, linear(parsed, url));
      }),
      { numRuns: 2000 },
    );
  });
});

describe('keys of domains found by following links', () => {
  it('host: the host with a port that is not the default; registrable: eTLD+1 by the ICANN section of the Public Suffix List', () => {
    const key = (u: string, k: 'host' | 'registrable'): string => newDomainKey(new URL(u), k);
    assert.equal(key('https://www.Example.co.uk/x', 'host'), 'www.example.co.uk');
    assert.equal(key('https://www.example.co.uk/x', 'registrable'), 'example.co.uk');
    assert.equal(key('http://shop.example.com:8080/', 'registrable'), 'example.com:8080');
    assert.equal(key('https://example.com:443/', 'registrable'), 'example.com');
    // Private-section suffixes (github.io) are not split: one operator's servers, one pace.
    assert.equal(key('https://alice.github.io/', 'registrable'), 'github.io');
    assert.equal(key('http://localhost:3000/', 'registrable'), 'localhost:3000');
    assert.equal(key('http://127.0.0.5:81/', 'registrable'), '127.0.0.5:81');
    assert.equal(key('http://[::1]:81/', 'registrable'), '[::1]:81');
    assert.equal(key('http://a.b.site3.test/', 'registrable'), 'site3.test');
    assert.equal(key('http://xn--bcher-kva.example/', 'host'), 'xn--bcher-kva.example');
  });
});
