/** RedisClock (Redis's clock seen locally) and Coalescer (same-turn calls batched). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Coalescer } from '../../src/queue/coalesce.js';
import { RedisClock } from '../../src/queue/internal.js';

describe('RedisClock', () => {
  it('maps through the sample with the shortest round trip; uncertainty is half of it', () => {
    const c = new RedisClock();
    assert.equal(c.uncertaintyMs, 0);
    c.sample(10_000, 100, 110); // offset 9,895, rtt 10
    assert.equal(c.toLocal(10_000), 105);
    assert.equal(c.toRedis(105), 10_000);
    assert.equal(c.uncertaintyMs, 5);
    c.sample(20_000, 200, 240); // worse round trip, still fresh: ignored
    assert.equal(c.toRedis(105), 10_000);
    c.sample(20_000, 300, 302); // better: taken (offset 19,699)
    assert.equal(c.toRedis(301), 20_000);
    assert.equal(c.uncertaintyMs, 1);
    c.sample(25_000, 1000, 1060); // one slow reply: the good recent sample stays
    assert.equal(c.uncertaintyMs, 1);
    const later = 300 + RedisClock.windowMs + 10;
    c.sample(30_000, later, later + 20); // the best has left the window: the best of what remains
    assert.equal(c.uncertaintyMs, 10);
  });

  it('ignores nonsense samples', () => {
    const c = new RedisClock();
    c.sample(Number.NaN, 0, 1);
    c.sample(-5, 0, 1);
    assert.equal(c.uncertaintyMs, 0);
  });
});

/** A Coalescer whose batch calls answer each request with itself, and the batches it sent. */
function recording(maxLingerMs?: number): { c: Coalescer<number, number>; sent: number[][] } {
  const sent: number[][] = [];
  const c = new Coalescer<number, number>(
    (_k, reqs) => {
      sent.push(reqs);
      return Promise.resolve(reqs);
    },
    100,
    maxLingerMs,
  );
  return { c, sent };
}

describe('Coalescer', () => {
  it('calls with one key in one turn of the event loop go in one batch, in order; other keys apart', async () => {
    const batches: [string, number[]][] = [];
    const c = new Coalescer<number, number>((key, reqs) => {
      batches.push([key, reqs]);
      return Promise.resolve(reqs.map((r) => r * 10));
    }, 100);
    const r = await Promise.all([c.add('a', 1), c.add('b', 2), c.add('a', 3)]);
    assert.deepEqual(r, [10, 20, 30]);
    assert.deepEqual(batches, [['a', [1, 3]], ['b', [2]]]);
    await c.add('a', 4);
    assert.deepEqual(batches.at(-1), ['a', [4]]);
  });

  it('a full batch goes at once; the rest forms the next', async () => {
    const sizes: number[] = [];
    const c = new Coalescer<number, number>((_k, reqs) => {
      sizes.push(reqs.length);
      return Promise.resolve(reqs);
    }, 3);
    await Promise.all([1, 2, 3, 4, 5, 6, 7].map((n) => c.add('k', n)));
    assert.deepEqual(sizes, [3, 3, 1]);
  });

  it('with halveFrom, a batch that big goes as two calls, first half first; each call gets its own answer', async () => {
    const batches: number[][] = [];
    const c = new Coalescer<number, number>(
      (_k, reqs) => {
        batches.push(reqs);
        return Promise.resolve(reqs.map((r) => r * 10));
      },
      100,
      0,
      4,
    );
    assert.deepEqual(await Promise.all([1, 2, 3].map((n) => c.add('k', n))), [10, 20, 30]);
    assert.deepEqual(await Promise.all([1, 2, 3, 4, 5].map((n) => c.add('k', n))), [10, 20, 30, 40, 50]);
    assert.deepEqual(batches, [[1, 2, 3], [1, 2, 3], [4, 5]], 'three calls: one under halveFrom; five as three and two');
    // Cut between callers only: one addMany stays whole, beside others or alone.
    batches.length = 0;
    const many = c.addMany('k', [1, 2, 3, 4]);
    assert.deepEqual(await Promise.all([many, c.add('k', 5), c.add('k', 6)]), [[10, 20, 30, 40], 50, 60]);
    assert.deepEqual(await c.addMany('k', [7, 8, 9, 10, 11]), [70, 80, 90, 100, 110]);
    assert.deepEqual(batches, [[1, 2, 3, 4], [5, 6], [7, 8, 9, 10, 11]]);
  });

  it('a failed batch rejects every call in it', async () => {
    const c = new Coalescer<number, number>(() => Promise.reject(new Error('down')), 10);
    const results = await Promise.allSettled([c.add('k', 1), c.add('k', 2)]);
    assert.deepEqual(results.map((r) => r.status), ['rejected', 'rejected']);
  });

  it('with a linger: a call among calls that came close together waits for the next and shares its batch; a lone call waits for nothing', async () => {
    const { c, sent: batches } = recording(5_000);
    const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
    // The first call ever has no gap to go by: it goes at once, not after the linger.
    const t0 = performance.now();
    await c.add('k', 0);
    assert.ok(performance.now() - t0 < 2_500, 'a lone call is not held for the linger');
    // Calls about 200 ms apart, each answered before the next: the mean gap
    // is then a few hundred ms (more on a slow machine, far below the 5 s
    // linger), so a new batch waits that long ...
    for (let i = 1; i <= 4; i++) {
      await sleep(200);
      await c.add('k', i);
    }
    // ... and a call 1 ms after the next one joins its batch instead of going alone.
    void c.add('k', 5);
    await sleep(1);
    await c.add('k', 6);
    assert.deepEqual(batches.at(-1), [5, 6]);
    // Without a linger (the default) the two would have gone apart.
    const { c: d, sent: plain } = recording();
    void d.add('k', 1);
    await sleep(1);
    await d.add('k', 2);
    assert.deepEqual(plain, [[1], [2]]);
  });

  it('flushAll sends a lingering batch at once', async () => {
    const { c, sent } = recording(60_000);
    await c.add('k', 1);
    await new Promise((r) => setTimeout(r, 5));
    // (Calls 5 ms apart: this one's batch would wait for company; flushAll sends it before returning.)
    const p = c.add('k', 2);
    assert.deepEqual(sent, [[1]]);
    c.flushAll();
    assert.deepEqual(sent, [[1], [2]]);
    assert.equal(await p, 2);
  });
});
