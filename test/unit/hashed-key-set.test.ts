import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HashedKeySet } from '../../src/crawl/links/hashed-key-set.js';

describe('HashedKeySet', () => {
  it('holds what was added through its growth, once each, and nothing else', () => {
    const set = new HashedKeySet();
    const added = Array.from({ length: 200_000 }, (_, i) => `site-${i}.example`);
    for (const k of added) set.add(k);
    for (const k of added.slice(0, 1000)) set.add(k); // again: not counted twice
    assert.equal(set.size, added.length);
    assert.ok(added.every((k) => set.has(k)), 'every added key is found after the table grew');
    // Keys near the added ones (a character more, fewer, another case, a port): none found.
    const others = added.flatMap((k) => [`${k}.`, k.slice(1), k.toUpperCase(), `${k}:443`]);
    assert.equal(others.filter((k) => set.has(k)).length, 0);
    assert.equal(set.has(''), false);
    set.add('');
    assert.equal(set.has(''), true, 'the empty string is a key like any other');
  });
});
