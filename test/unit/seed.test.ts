/** Seed files: parsing and validation. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
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
