/** The crawler's pure parts: seed files, domain keys, URLs, robots.txt, links, Bloom sizing, the address guard. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import bloomFilters from 'bloom-filters';
import { bloomParams, bloomPositions, BLOCK_BITS, blockedFalsePositiveRate, classicBloomParams } from '../../src/crawl/bloom.js';
import { DomainMatcher, parseDomainKey, type DomainKey } from '../../src/crawl/domains.js';
import { extractLinks, headerNofollow } from '../../src/crawl/links.js';
import { guardedLookup, isPrivateAddress } from '../../src/crawl/netguard.js';
import { normalizeUrl, originOf } from '../../src/crawl/normalize.js';
import { crawlKeys } from '../../src/crawl/keys.js';
import { parseRobots, RobotsMatcher } from '../../src/crawl/robots.js';
import { parseSeedText, SeedError, SEED_DEFAULTS } from '../../src/crawl/seed.js';

const seedYaml = (extra = ''): string => `arena: docs-crawl
rateLimits:
  github.com: 10
  wikipedia.org: 5
  "127.0.0.1:18001": 20
start:
  - https://www.wikipedia.org/
${extra}`;

function seedError(text: string): SeedError {
  try {
    parseSeedText(text);
  } catch (err) {
    assert.ok(err instanceof SeedError, `not a SeedError: ${String(err)}`);
    return err;
  }
  assert.fail('expected a SeedError');
}

describe('seed files', () => {
  it('accepts the documented shape, YAML or JSON, and fills the documented defaults', () => {
    const s = parseSeedText(seedYaml('maxDepth: 5\nmaxPages: 100000\ninclude: ["^https?://[^/]+/docs/"]\nexclude: ["\\\\?sessionid="]\n'));
    assert.equal(s.arena, 'docs-crawl');
    assert.deepEqual(s.rateLimits, { 'github.com': 10, 'wikipedia.org': 5, '127.0.0.1:18001': 20 });
    assert.deepEqual(s.start, ['https://www.wikipedia.org/']);
    assert.equal(s.maxDepth, 5);
    assert.equal(s.maxInFlightPerDomain, SEED_DEFAULTS.maxInFlightPerDomain);
    assert.equal(s.userAgent, SEED_DEFAULTS.userAgent);
    assert.equal(s.productToken, 'weir');
    assert.deepEqual(s.bloom, SEED_DEFAULTS.bloom);
    const j = parseSeedText(JSON.stringify({ arena: 'j', rateLimits: { 'example.org': 'unlimited' }, start: ['http://example.org'] }));
    assert.equal(j.rateLimits['example.org'], 'unlimited');
  });

  it('names the field and what is wrong', () => {
    const cases: [string, string, RegExp][] = [
      ['rateLimits:\n  a.com: 1\nstart: [http://a.com/]', 'arena', /required/],
      ['arena: "bad name!"\nrateLimits:\n  a.com: 1\nstart: [http://a.com/]', 'arena', /letters, digits/],
      ['arena: a\nstart: [http://a.com/]', 'rateLimits', /required/],
      ['arena: a\nrateLimits:\n  a.com: 0\nstart: [http://a.com/]', 'rateLimits.a.com', /requests per second/],
      ['arena: a\nrateLimits:\n  a.com: fast\nstart: [http://a.com/]', 'rateLimits.a.com', /unlimited/],
      ['arena: a\nrateLimits:\n  "http://a.com/": 1\nstart: [http://a.com/]', 'rateLimits.http://a.com/', /not a URL/],
      ['arena: a\nrateLimits:\n  "a.com:99999": 1\nstart: [http://a.com/]', 'rateLimits.a.com:99999', /port/],
      ['arena: a\nrateLimits:\n  "::1": 1\nstart: [http://a.com/]', 'rateLimits.::1', /brackets/],
      ['arena: a\nrateLimits:\n  a.com: 1\n  A.COM: 2\nstart: [http://a.com/]', 'rateLimits.A.COM', /same domain/],
      ['arena: a\nrateLimits:\n  a.com: 1', 'start', /required/],
      ['arena: a\nrateLimits:\n  a.com: 1\nstart: [http://b.com/]', 'start[0]', /not inside any domain/],
      ['arena: a\nrateLimits:\n  a.com: 1\nstart: ["ftp://a.com/"]', 'start[0]', /http/],
      ['arena: a\nrateLimits:\n  a.com: 1\nstart: [http://a.com/]\nmaxDepth: -1', 'maxDepth', /whole number/],
      ['arena: a\nrateLimits:\n  a.com: 1\nstart: [http://a.com/]\ninclude: ["("]', 'include[0]', /regular expression/],
      ['arena: a\nrateLimits:\n  a.com: 1\nstart: [http://a.com/]\nbloom: { falsePositiveRate: 2 }', 'bloom.falsePositiveRate', /between 0 and 1/],
      ['arena: a\nrateLimits:\n  a.com: 1\nstart: [http://a.com/]\nallowPrivateNetworks: "yes"', 'allowPrivateNetworks', /true or false/],
      ['arena: a\nrateLimits:\n  a.com: 1\nstart: [http://a.com/]\nmaxDpeth: 3', 'maxDpeth', /not a known field/],
      ['arena: a\nuserAgent: "/0.1"\nrateLimits:\n  a.com: 1\nstart: [http://a.com/]', 'userAgent', /product token/],
      ['arena: [unclosed', '', /not valid YAML/],
      ['- just\n- a list', '', /mapping/],
    ];
    for (const [text, field, message] of cases) {
      const e = seedError(text);
      assert.equal(e.field, field, text);
      assert.equal(e.code, 'WEIR_SEED');
      assert.match(e.message, message, text);
    }
  });
});

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

describe('robots.txt', () => {
  const txt = `# comment
User-agent: *
Disallow: /

User-agent: Weir
User-agent: otherbot
Disallow: /private
Allow: /private/public
Disallow: /*.pdf$
Disallow: /tmp*
Crawl-delay: 2

User-agent: weir
Disallow: /also
`;
  it('uses the group of our product token (case-insensitively, all such groups combined)', () => {
    const r = parseRobots(txt, 'weir');
    const m = new RobotsMatcher(r);
    assert.equal(r.crawlDelay, 2);
    assert.equal(m.isAllowed('/'), true, 'the * group does not apply to us');
    assert.equal(m.isAllowed('/private/x'), false);
    assert.equal(m.isAllowed('/private/public/x'), true, 'longest match wins');
    assert.equal(m.isAllowed('/doc.pdf'), false);
    assert.equal(m.isAllowed('/doc.pdf?x'), true, '$ anchors the end');
    assert.equal(m.isAllowed('/tmpfile'), false);
    assert.equal(m.isAllowed('/also'), false, 'second group for the same token');
    assert.equal(m.isAllowed('/robots.txt'), true);
  });

  it('falls back to *, and allows everything with no applying group', () => {
    assert.equal(new RobotsMatcher(parseRobots(txt, 'somebot')).isAllowed('/x'), false);
    assert.equal(new RobotsMatcher(parseRobots('User-agent: other\nDisallow: /\n', 'weir')).isAllowed('/x'), true);
    assert.equal(new RobotsMatcher(parseRobots('User-agent: *\nDisallow:\n', 'weir')).isAllowed('/x'), true);
  });

  it('prefers allow on equal-length matches and compares percent-encodings canonically', () => {
    const m = new RobotsMatcher(parseRobots('User-agent: *\nDisallow: /a\nAllow: /a\nDisallow: /%7Euser\n', 'weir'));
    assert.equal(m.isAllowed('/a'), true);
    assert.equal(m.isAllowed('/~user/x'), false);
  });
});

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

describe('Bloom filter', () => {
  it('starts from the bloom-filters package formulas, then grows the bitmap for the blocked layout', () => {
    for (const [n, p] of [[10_000_000, 0.000001], [1000, 0.01], [123_457, 0.0001]] as const) {
      const ref = bloomFilters.BloomFilter.create(n, p);
      const classic = classicBloomParams(n, p);
      assert.equal(classic.bits, ref._size, `m for n=${n} p=${p}`);
      assert.equal(classic.hashes, ref._nbHashes, `k for n=${n} p=${p}`);
      const ours = bloomParams(n, p);
      assert.equal(ours.hashes, ref._nbHashes);
      assert.equal(ours.bits % BLOCK_BITS, 0);
      assert.ok(ours.bits >= ref._size);
      assert.ok(blockedFalsePositiveRate(ours.bits, ours.hashes, n) <= p);
    }
  });

  it('puts all of a key\'s bits, distinct, in one block, and keeps false positives near the target', () => {
    const params = bloomParams(20_000, 0.001);
    const bits = new Uint8Array(params.bits / 8);
    const set = (p: number): void => {
      bits[p >> 3] = (bits[p >> 3] as number) | (1 << (p & 7));
    };
    const has = (p: number): boolean => ((bits[p >> 3] as number) & (1 << (p & 7))) !== 0;
    for (let i = 0; i < 20_000; i++) {
      const pos = bloomPositions(`https://example.test/page/${i}`, params);
      assert.equal(new Set(pos).size, params.hashes);
      assert.equal(new Set(pos.map((p) => Math.floor(p / BLOCK_BITS))).size, 1);
      pos.forEach(set);
    }
    let fp = 0;
    const trials = 100_000;
    for (let i = 0; i < trials; i++) if (bloomPositions(`https://other.test/${i}`, params).every(has)) fp++;
    // Sized for 0.001 (the blocked rate computed exactly); 100,000 trials: allow sampling noise.
    assert.ok(fp / trials < 0.0015, `false-positive rate ${fp / trials}`);
  });
});

describe('private-network guard', () => {
  it('classifies addresses', () => {
    for (const a of ['127.0.0.1', '10.1.2.3', '172.16.0.1', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '::1', 'fe80::1', 'fd00:ec2::254', '::ffff:127.0.0.1']) {
      assert.equal(isPrivateAddress(a), true, a);
    }
    for (const a of ['93.184.216.34', '8.8.8.8', '2606:4700::1111']) assert.equal(isPrivateAddress(a), false, a);
  });

  it('refuses a name whose DNS answer is private, checked on the answer given to connect', async () => {
    const answers: Record<string, string> = { 'public.test': '93.184.216.34', 'sneaky.test': '127.0.0.1' };
    const resolve = (host: string, _o: unknown, cb: (e: NodeJS.ErrnoException | null, a: { address: string; family: number }[]) => void): void =>
      cb(null, [{ address: answers[host] ?? '10.0.0.1', family: 4 }]);
    const lookup = guardedLookup(false, resolve);
    const ask = (host: string): Promise<string> =>
      new Promise((res) => lookup(host, {}, (err, address) => res(err ? `error ${(err as { code?: string }).code}` : (address as string))));
    assert.equal(await ask('public.test'), '93.184.216.34');
    assert.equal(await ask('sneaky.test'), 'error WEIR_PRIVATE_ADDRESS');
    // The answer changes between checks: each connection is judged on its own answer.
    answers['public.test'] = '169.254.169.254';
    assert.equal(await ask('public.test'), 'error WEIR_PRIVATE_ADDRESS');
    assert.equal(await new Promise((res) => guardedLookup(true, resolve)('sneaky.test', {}, (_e, a) => res(a))), '127.0.0.1');
  });
});

describe('key names from page content', () => {
  it('only a validated origin goes into a key name', () => {
    const keys = crawlKeys('a', { key: (arena, name) => `weir:{${arena}}:${name}` });
    for (const u of ['http://Example.COM:8080/x', 'https://bücher.de/', 'http://[::1]:9000/']) {
      const n = normalizeUrl(u);
      assert.ok(n);
      assert.ok(keys.robots(originOf(n)).startsWith('weir:{a}:robots:http'));
    }
    for (const bad of ['http://a.com/x', 'http://a{b}.com', 'redis://x', 'http://a.com:8080\r\nDEL x']) assert.throws(() => keys.robots(bad), bad);
  });
});
