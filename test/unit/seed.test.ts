/** Seed files: parsing and validation. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compileUrlPattern } from '../../src/crawl/urls/pattern.js';
import { duplicateJsonKey, MAX_SEED_BYTES } from '../../src/crawl/seed/text.js';
import { parseSeedText, SeedError, SEED_DEFAULTS, storableSeed, validateSeed } from '../../src/crawl/seed/seed.js';

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
    assert.equal(s.sendMarginMs, null, 'unset: marginFor decides');
    assert.equal(parseSeedText(seedYaml('sendMarginMs: 40\n')).sendMarginMs, 40);
    const j = parseSeedText(JSON.stringify({ arena: 'j', rateLimits: { 'example.org': 'unlimited' }, start: ['http://example.org'] }));
    assert.equal(j.rateLimits['example.org'], 'unlimited');
  });

  it('otherDomains: ignore by default, follow with the documented defaults, or a mapping; the stored form reads back the same', () => {
    assert.equal(parseSeedText(seedYaml()).otherDomains, null);
    assert.equal(parseSeedText(seedYaml('otherDomains: ignore\n')).otherDomains, null);
    assert.deepEqual(parseSeedText(seedYaml('otherDomains: follow\n')).otherDomains, SEED_DEFAULTS.otherDomains);
    const s = parseSeedText(seedYaml('otherDomains: { key: host, rate: 0.5, maxDomains: 20 }\nmaxPagesPerDomain: 50\n'));
    assert.deepEqual(s.otherDomains, { key: 'host', rate: 0.5, maxInFlight: 1, maxDomains: 20 });
    assert.equal(s.maxPagesPerDomain, 50);
    assert.deepEqual(validateSeed(JSON.parse(JSON.stringify(storableSeed(s)))), s);
    assert.equal(s.adaptivePace, null, 'adaptivePace is off by default');
    assert.deepEqual(parseSeedText(seedYaml('adaptivePace: true\n')).adaptivePace, SEED_DEFAULTS.adaptivePace);
    assert.deepEqual(parseSeedText(seedYaml('adaptivePace: { delayFactor: 0.5 }\n')).adaptivePace, { delayFactor: 0.5, maxDelayMs: 30_000 });
  });

  it('seeds/example.yaml parses and shows every field there is (set, or commented out with its default)', async () => {
    const { readFile } = await import('node:fs/promises');
    const text = await readFile(new URL('../../seeds/example.yaml', import.meta.url), 'utf8');
    const seed = parseSeedText(text);
    assert.equal(seed.arena, 'docs-crawl');
    const shown = new Set([...text.matchAll(/^#? ?([a-zA-Z]+):/gm)].map((m) => m[1]));
    const fields = Object.keys(storableSeed(validateSeed({ arena: 'a', rateLimits: { 'a.com': 1 }, start: ['http://a.com/'] })));
    assert.deepEqual(fields.filter((f) => !shown.has(f)), []);
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
      ['arena: a\nrateLimits:\n  a.com: 1\nstart: [http://a.com/]\nsendMarginMs: 1001', 'sendMarginMs', /whole number from 0 to 1000/],
      ['arena: a\nrateLimits:\n  a.com: 1\nstart: [http://a.com/]\nmaxDpeth: 3', 'maxDpeth', /not a known field/],
      ['arena: a\nuserAgent: "/0.1"\nrateLimits:\n  a.com: 1\nstart: [http://a.com/]', 'userAgent', /product token/],
      ['arena: a\nrateLimits:\n  a.com: 1\nstart: [http://a.com/]\notherDomains: yes', 'otherDomains', /"ignore", "follow" or a mapping/],
      ['arena: a\nrateLimits:\n  a.com: 1\nstart: [http://a.com/]\notherDomains: { key: domain }', 'otherDomains.key', /"host" or "registrable"/],
      ['arena: a\nrateLimits:\n  a.com: 1\nstart: [http://a.com/]\notherDomains: { rate: 0 }', 'otherDomains.rate', /requests per second/],
      ['arena: a\nrateLimits:\n  a.com: 1\nstart: [http://a.com/]\notherDomains: { maxDomains: 0 }', 'otherDomains.maxDomains', /whole number from 1/],
      ['arena: a\nrateLimits:\n  a.com: 1\nstart: [http://a.com/]\notherDomains: { maxInFlight: 1.5 }', 'otherDomains.maxInFlight', /whole number/],
      ['arena: a\nrateLimits:\n  a.com: 1\nstart: [http://a.com/]\notherDomains: { maxDomain: 5 }', 'otherDomains.maxDomain', /not a known field/],
      ['arena: a\nrateLimits:\n  a.com: 1\nstart: [http://a.com/]\nmaxPagesPerDomain: 0', 'maxPagesPerDomain', /whole number from 1/],
      ['arena: a\nrateLimits:\n  a.com: 1\nstart: [http://a.com/]\nadaptivePace: fast', 'adaptivePace', /true, false or a mapping/],
      ['arena: a\nrateLimits:\n  a.com: 1\nstart: [http://a.com/]\npriorityDepth: -1', 'priorityDepth', /whole number from 0/],
      ['arena: a\nrateLimits:\n  a.com: 1\nstart: [http://a.com/]\nperServer: yes-please', 'perServer', /true or false/],
      ['arena: a\nrateLimits:\n  a.com: 1\nstartFiles: urls.txt', 'startFiles', /list of file paths/],
      ['arena: a\nrateLimits:\n  a.com: 1\nstartFiles: [""]', 'startFiles', /list of file paths/],
      ['arena: a\nrateLimits:\n  a.com: 1', 'start', /is required \(or startFiles\)/],
      ['arena: a\nrateLimits:\n  a.com: 1\nstart: [http://a.com/]\nrevisit: often', 'revisit', /true, false or a mapping/],
      ['arena: a\nrateLimits:\n  a.com: 1\nstart: [http://a.com/]\nrevisit: { minIntervalSeconds: 0 }', 'revisit.minIntervalSeconds', /whole number from 1/],
      ['arena: a\nrateLimits:\n  a.com: 1\nstart: [http://a.com/]\nrevisit: { minIntervalSeconds: 60, maxIntervalSeconds: 30 }', 'revisit.maxIntervalSeconds', /whole number from 60/],
      ['arena: a\nrateLimits:\n  a.com: 1\nstart: [http://a.com/]\nrevisit: { every: 5 }', 'revisit.every', /not a known field/],
      ['arena: a\nrateLimits:\n  a.com: 1\nstart: [http://a.com/]\nadaptivePace: { delayFactor: -1 }', 'adaptivePace.delayFactor', /number from 0 to 1000/],
      ['arena: a\nrateLimits:\n  a.com: 1\nstart: [http://a.com/]\nadaptivePace: { maxDelayMs: 0 }', 'adaptivePace.maxDelayMs', /whole number from 1/],
      ['arena: a\nrateLimits:\n  a.com: 1\nstart: [http://a.com/]\nadaptivePace: { factor: 2 }', 'adaptivePace.factor', /not a known field/],
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

describe('seeds that passed but should not (round two)', () => {
  const base = { arena: 'a', rateLimits: { 'a.com': 1 }, start: ['http://a.com/'] };
  const json = (extra: Record<string, unknown>): string => JSON.stringify({ ...base, ...extra });

  it('a userAgent with control characters or text outside ASCII is refused, naming the field', () => {
    for (const ua of ['weir/1\u0000x', 'weir/1\u001b[31m', 'weir/1 \u2603', 'weir/1\u007f', 'weir/1\r\nX-Evil: 1']) {
      const e = seedError(json({ userAgent: ua }));
      assert.equal(e.field, 'userAgent', JSON.stringify(ua));
    }
    assert.equal(parseSeedText(json({ userAgent: 'weir/1.0 (+https://example.org/bot)\tx' })).userAgent.startsWith('weir/1.0'), true);
  });

  it('a key twice in one JSON object is refused (the last one no longer wins silently)', () => {
    const twice = '{"arena":"a","allowPrivateNetworks":false,"rateLimits":{"a.com":1,"a.com":1000000},"start":["http://a.com/"],"allowPrivateNetworks":true}';
    assert.equal(seedError(twice).field, 'rateLimits.a.com');
    assert.equal(seedError('{"arena":"a","arena":"b"}').field, 'arena');
    assert.equal(duplicateJsonKey('{"a":[{"x":1},{"x":2}],"b":{"x":"\\"a\\"","y":1}}'), null, 'same key in sibling objects is fine');
    assert.equal(duplicateJsonKey('{"a":{"b":{"c":1,"c":2}}}'), 'a.b.c');
    for (const broken of ['{"', '{"a', '{"a\\"', '{"a":"b']) assert.equal(duplicateJsonKey(broken), null, broken);
    assert.equal(seedError('{"').field, '', 'not JSON: the parser\'s message, not a crash');
  });

  it('a Bloom filter one bitmap cannot hold is refused with the largest size it can serve, and the shards that would hold it', () => {
    const e = seedError(json({ bloom: { expectedUrls: 1_000_000_000, falsePositiveRate: 0.000001 } }));
    assert.equal(e.field, 'bloom.expectedUrls');
    assert.match(e.message, /at most \d+ URLs per shard at this rate; set shards to 10 or more/);
    // Split over shards, each part one Redis string, it fits.
    assert.equal(parseSeedText(json({ shards: 10, bloom: { expectedUrls: 1_000_000_000, falsePositiveRate: 0.000001 } })).shards, 10);
    assert.match(seedError(json({ shards: 9, bloom: { expectedUrls: 1_000_000_000, falsePositiveRate: 0.000001 } })).message, /in each of 9 shards/);
    for (const bad of [0, 1025, 2.5, '4']) assert.equal(seedError(json({ shards: bad })).field, 'shards');
    assert.equal(parseSeedText(json({})).shards, null);
    const most = Number(/at most (\d+) URLs/.exec(e.message)?.[1]);
    assert.ok(parseSeedText(json({ bloom: { expectedUrls: most, falsePositiveRate: 0.000001 } })));
    assert.equal(seedError(json({ bloom: { expectedUrls: most + 1_000_000, falsePositiveRate: 0.000001 } })).field, 'bloom.expectedUrls');
  });

  it('messages say what was there: NaN and infinities as themselves, "constructor" as a domain, canonical IPv6 keys', () => {
    assert.match(seedError('arena: a\nrateLimits:\n  a.com: .nan\nstart: [http://a.com/]\n').message, /got NaN/);
    assert.match(seedError('arena: a\nrateLimits:\n  a.com: .inf\nstart: [http://a.com/]\n').message, /got Infinity/);
    assert.match(seedError('arena: a\nrateLimits:\n  a.com: 1\nstart: [http://a.com/]\nmaxDepth: -.inf\n').message, /got -Infinity/);
    const c = seedError('arena: a\nrateLimits:\n  constructor: 1\nstart: [http://a.com/]\n');
    assert.equal(c.field, 'start[0]', 'constructor is a domain like any other, not a duplicate');
    const v6 = parseSeedText(json({ rateLimits: { '[0:0::1]:8080': 1 }, start: ['http://[::1]:8080/'] }));
    assert.deepEqual(Object.keys(v6.rateLimits), ['[::1]:8080']);
  });

  it('a seed over 1 MiB is refused at once, before parsing', () => {
    const big = json({ start: ['http://a.com/'], include: ['x'.repeat(MAX_SEED_BYTES)] });
    const started = performance.now();
    assert.match(seedError(big).message, /over 1048576 bytes/);
    assert.ok(performance.now() - started < 1000);
  });

  it('include/exclude patterns are RE2: linear on any URL, and what RE2 cannot run is refused naming the pattern', () => {
    assert.equal(seedError(json({ include: ['^a', '(?=x)'] })).field, 'include[1]');
    assert.equal(seedError(json({ exclude: ['(a)\\1'] })).field, 'exclude[0]');
    const p = compileUrlPattern('(a+)+$');
    const started = performance.now();
    assert.equal(p.test(`http://a.com/${'a'.repeat(50_000)}!`), false);
    assert.ok(performance.now() - started < 2000, 'a backtracking engine takes hours here');
  });
});
