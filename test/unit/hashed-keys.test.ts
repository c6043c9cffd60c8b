import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HashedKeyMap, HashedKeySet } from '../../src/crawl/links/hashed-keys.js';

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

  it('refuses a key over its most (the table never grows past it), and still holds those it took', () => {
    const set = new HashedKeySet(5000);
    // (5,000 keys at most: slots for twice that, rounded up to 2^14, half of them filled at most: 8,192.)
    let held = 0;
    for (let i = 0; i < 20_000; i++) if (set.add(`k${i}`)) held += 1;
    assert.equal(held, 8192);
    assert.equal(set.size, held);
    assert.equal(set.add('k0'), true, 'a key it holds is held still');
    assert.ok(Array.from({ length: held }, (_, i) => `k${i}`).every((k) => set.has(k)));
    assert.equal(set.has(`k${held}`), false, 'the first key refused is not held');
  });
});

describe('HashedKeyMap', () => {
  it('gives back each key\'s last value through its growth, nothing for keys never set, and counts keys once', () => {
    const map = new HashedKeyMap(0, 1_000_000);
    const keys = Array.from({ length: 200_000 }, (_, i) => `site-${i}.example`);
    keys.forEach((k, i) => assert.equal(map.set(k, i % 50_000), true));
    keys.slice(0, 1000).forEach((k, i) => map.set(k, 60_000 + i)); // again, a new value: not a new key
    assert.equal(map.size, keys.length);
    assert.ok(keys.every((k, i) => map.get(k) === (i < 1000 ? 60_000 + i : i % 50_000)), 'every key has its last value after the table grew');
    const others = keys.flatMap((k) => [`${k}.`, k.slice(1), k.toUpperCase(), `${k}:443`]);
    assert.equal(others.filter((k) => map.get(k) !== undefined).length, 0);
    assert.equal(map.get(''), undefined);
    map.set('', 0);
    assert.equal(map.get(''), 0, 'the empty string is a key like any other, and 0 a value');
  });

  it('finds a key given in parts (a slice of a string and a suffix) as the whole string', () => {
    const map = new HashedKeyMap(0, 1000);
    map.set('example.test', 1);
    map.set('example.test:443', 2);
    map.set('a.example.test', 3);
    const host = 'www.a.example.test';
    assert.deepEqual(
      [map.get(host, 4), map.get(host, 6), map.get(host, 6, ':443'), map.get(host, 6, ':80'), map.get(host, 0), map.get('', 0, 'example.test')],
      [3, 1, 2, undefined, undefined, 1],
    );
    // A name asked with a suffix, then without, then with another (its hash taken up again each time), and a copy of the string.
    const copy = `www.a.${'example.test'}`;
    assert.deepEqual([map.get(host, 6, ':443'), map.get(host, 6), map.get(host, 6, ':80'), map.get(copy, 6, ':443'), map.get(copy, 2), map.get(host, 4, ':443')], [2, 1, undefined, 2, undefined, undefined]);
  });

  it('refuses a key over its most (the table never grows past it), and still sets those it holds', () => {
    const map = new HashedKeyMap(10, 5000);
    // (5,000 keys at most: slots for twice that, rounded up to 2^14, half of them filled at most: 8,192.)
    let held = 0;
    for (let i = 0; i < 20_000; i++) if (map.set(`k${i}`, i)) held += 1;
    assert.equal(held, 8192);
    assert.equal(map.size, held);
    assert.equal(map.set('k0', 7), true, 'a key it holds takes a new value');
    assert.equal(map.get('k0'), 7);
    assert.equal(map.get(`k${held}`), undefined, 'the first key refused was not set');
  });
});
