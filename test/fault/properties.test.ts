/**
 * Property tests (fast-check, 1,000+ runs each): hostile seed files and URLs.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { stringify } from 'yaml';
import { normalizeUrl } from '../../src/crawl/urls/normalize.js';
import { parseSeedText, SeedError, validateSeed } from '../../src/crawl/seed/seed.js';

const RUNS = 1000;

/** Values of every shape, including the ones a seed field expects. */
const anyValue = fc.oneof(
  fc.string(),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.constant('unlimited'),
  fc.array(fc.string(), { maxLength: 3 }),
  fc.dictionary(fc.string(), fc.oneof(fc.string(), fc.integer(), fc.double(), fc.constant('unlimited')), { maxKeys: 3 }),
  fc.webUrl(),
);

const seedLike = fc.record(
  {
    arena: fc.oneof(fc.stringMatching(/^[A-Za-z0-9_.-]{1,64}$/), anyValue),
    userAgent: anyValue,
    rateLimits: fc.oneof(fc.dictionary(fc.oneof(fc.domain(), fc.string()), fc.oneof(fc.double(), fc.integer(), fc.constant('unlimited'), fc.string())), anyValue),
    start: fc.oneof(fc.array(fc.oneof(fc.webUrl(), fc.string()), { maxLength: 4 }), anyValue),
    maxDepth: anyValue,
    maxPages: anyValue,
    maxInFlightPerDomain: anyValue,
    include: anyValue,
    exclude: anyValue,
    allowPrivateNetworks: anyValue,
    bloom: fc.oneof(fc.record({ expectedUrls: anyValue, falsePositiveRate: anyValue }, { requiredKeys: [] }), anyValue),
  },
  { requiredKeys: [] },
);

describe('seed files, randomly broken', () => {
  it('always give a valid seed or a typed SeedError naming a field, never a crash (objects)', () => {
    fc.assert(
      fc.property(seedLike, (data) => {
        try {
          const s = validateSeed(data);
          assert.equal(typeof s.arena, 'string');
        } catch (err) {
          assert.ok(err instanceof SeedError, `not a SeedError: ${String(err)}`);
          assert.equal(err.code, 'WEIR_SEED');
          assert.ok(err.message.length > 0 && !err.message.includes('\n    at '));
        }
      }),
      { numRuns: RUNS },
    );
  });

  it('always give a valid seed or a typed SeedError, never a crash (text: YAML, JSON, garbage)', () => {
    const text = fc.oneof(
      seedLike.map((d) => stringify(d)),
      seedLike.map((d) => JSON.stringify(d)),
      fc.string(),
      fc.string().map((s) => `arena: ${s}\nrateLimits: {a.com: 1}\nstart: [http://a.com/]`),
    );
    fc.assert(
      fc.property(text, (t) => {
        try {
          parseSeedText(t);
        } catch (err) {
          assert.ok(err instanceof SeedError, `not a SeedError: ${String(err)}`);
        }
      }),
      { numRuns: RUNS },
    );
  });
});

describe('URL normaliser', () => {
  const urlish = fc.oneof(
    fc.webUrl({ withFragments: true, withQueryParameters: true }),
    fc.string(),
    fc.webUrl().map((u) => u.replace(/^https?/, (m) => m.toUpperCase())),
    fc.tuple(fc.webUrl(), fc.string()).map(([u, s]) => `${u}/${encodeURIComponent(s)}`),
    fc.tuple(fc.webUrl(), fc.stringMatching(/^(%[0-9a-fA-F]{2}|[a-z./~-])*$/)).map(([u, s]) => `${u}/${s}`),
  );

  it('never throws, gives null or a URL that parses, and is idempotent', () => {
    fc.assert(
      fc.property(urlish, (u) => {
        const n = normalizeUrl(u);
        if (n === null) return;
        const parsed = new URL(n);
        assert.ok(parsed.protocol === 'http:' || parsed.protocol === 'https:');
        assert.equal(parsed.hash, '');
        assert.equal(normalizeUrl(n), n);
      }),
      { numRuns: RUNS },
    );
  });

  it('normalises equal URLs equal (case of scheme and host, default port, escapes of unreserved characters, fragments)', () => {
    fc.assert(
      fc.property(fc.webUrl({ withQueryParameters: true }), fc.stringMatching(/^[A-Za-z0-9._~-]{0,12}$/), (u, seg) => {
        const url = new URL(u);
        const base = `${url.protocol}//${url.host}/${seg}${url.search}`;
        const escaped = `${url.protocol.toUpperCase()}//${url.host.toUpperCase()}${url.port === '' ? (url.protocol === 'https:' ? ':443' : ':80') : ''}/${[...seg].map((c) => `%${c.charCodeAt(0).toString(16)}`).join('')}${url.search}#frag`;
        assert.equal(normalizeUrl(escaped), normalizeUrl(base));
      }),
      { numRuns: RUNS },
    );
  });
});
