/** The shared Bloom filter's sizing and layout. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import bloomFilters from 'bloom-filters';
import { bloomParams, bloomPositions, BLOCK_BITS, blockedFalsePositiveRate, classicBloomParams, legacyBloomParams } from '../../src/crawl/dedupe/bloom.js';
describe('Bloom filter', () => {
  it('starts from the bloom-filters package formulas, grows the bitmap for the blocked layout, then takes the fewest hashes that fit in it', () => {
    for (const [n, p, k] of [[10_000_000, 0.000001, 14], [1000, 0.01, 5], [123_457, 0.0001, 10], [1_000_000, 0.001, 9]] as const) {
      const ref = bloomFilters.BloomFilter.create(n, p);
      const classic = classicBloomParams(n, p);
      assert.equal(classic.bits, ref._size, `m for n=${n} p=${p}`);
      assert.equal(classic.hashes, ref._nbHashes, `k for n=${n} p=${p}`);
      // The memory budget: the classic k, the bitmap grown until the blocked rate meets p.
      const legacy = legacyBloomParams(n, p);
      assert.equal(legacy.hashes, ref._nbHashes);
      assert.ok(legacy.bits >= ref._size);
      assert.ok(blockedFalsePositiveRate(legacy.bits, legacy.hashes, n) <= p);
      const ours = bloomParams(n, p);
      assert.equal(ours.hashes, k, `hashes for n=${n} p=${p}`);
      assert.equal(ours.bits % BLOCK_BITS, 0);
      assert.ok(ours.bits <= legacy.bits, 'no more memory than the classic k needs');
      assert.ok(blockedFalsePositiveRate(ours.bits, ours.hashes, n) <= p);
      // One hash fewer would not meet p in that memory.
      assert.ok(blockedFalsePositiveRate(legacy.bits, ours.hashes - 1, n) > p);
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

  it('gives the positions it always gave: a bitmap in Redis outlives the weir that set its bits', () => {
    const params = bloomParams(10_000_000, 0.001);
    assert.deepEqual(params, { bits: 154_883_584, hashes: 9 });
    assert.deepEqual(bloomPositions('https://example.com/a', params), [139957163, 139956778, 139956827, 139956965, 139956896, 139957080, 139957161, 139957012, 139956763]);
    assert.deepEqual(bloomPositions('https://example.org/', bloomParams(1000, 0.3)), [1245, 1240]);
  });
});
