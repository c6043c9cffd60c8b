/** Key names made from page content. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { crawlKeys } from '../../src/crawl/store/keys.js';
import { normalizeUrl, originOf } from '../../src/crawl/urls/normalize.js';
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
