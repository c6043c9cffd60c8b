/**
 * Politeness and fairness, judged on Redis's own serve times (µs from TIME).
 * Bounds are lower bounds on spacing, which a slow machine can only widen.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FairQueue, Lease } from '../../src/queue/index.js';
import { freshArena, jain, servedUs, sleep, useRedis } from '../helpers/fixture.js';

const fx = useRedis();

/** Runs `workers` concurrent take/commit loops until `total` items are served. */
async function drain(q: FairQueue, arena: string, total: number, workers: number, onLease?: (l: Lease) => Promise<void> | void): Promise<Lease[]> {
  const served: Lease[] = [];
  const ac = new AbortController();
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (served.length < total) {
        const l = await q.take(arena, { signal: ac.signal });
        if (!l) return;
        served.push(l);
        await onLease?.(l);
        await q.commit(l);
        if (served.length >= total) ac.abort();
      }
    }),
  );
  return served;
}

function gapsUs(leases: Lease[]): number[] {
  const t = leases.map(servedUs).sort((a, b) => a - b);
  return t.slice(1).map((v, i) => v - (t[i] as number));
}

describe('rate limit (politeness)', () => {
  it('never serves a queue twice less than 1/R apart, with 4 concurrent workers and a deep backlog', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { site: { rate: 50 } });
    await q.enqueue(arena, 'site', Array.from({ length: 40 }, (_, i) => `u${i}`));
    const served = await drain(q, arena, 40, 4);
    const gaps = gapsUs(served);
    assert.equal(gaps.length, 39);
    // interval 20,000 µs exactly; nothing may come sooner.
    assert.ok(Math.min(...gaps) >= 20_000, `smallest gap ${Math.min(...gaps)} µs`);
  });

  it('honours rates above 1,000/s as limits (5,000/s: 200 µs apart)', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { fast: { rate: 5000 } });
    await q.enqueue(arena, 'fast', Array.from({ length: 300 }, (_, i) => `u${i}`));
    const served = await drain(q, arena, 300, 4);
    const gaps = gapsUs(served);
    assert.ok(Math.min(...gaps) >= 200, `smallest gap ${Math.min(...gaps)} µs`);
  });

  it('carries the fractional µs of 1/R so 3/s averages 3/s (no gap under floor(1/R))', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { third: { rate: 3 } });
    await q.enqueue(arena, 'third', ['a', 'b', 'c', 'd']);
    const served = await drain(q, arena, 4, 2);
    const gaps = gapsUs(served);
    for (const g of gaps) assert.ok(g >= 333_333, `gap ${g} µs`);
    // three gaps of 333,333.33 µs: the carried fraction adds the 1 µs back.
    assert.ok(gaps.reduce((a, b) => a + b, 0) >= 1_000_000, `sum ${gaps.join('+')}`);
  });

  it('a queue that drains and refills gets no fresh slot (the seed design ran a 50/s limit at 5.8×)', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { refill: { rate: 50 } });
    const served: Lease[] = [];
    await q.enqueue(arena, 'refill', ['x0']);
    await Promise.all(
      [0, 1, 2].map(async () => {
        while (served.length < 25) {
          const r = await q.dequeue(arena);
          if (!r.lease) {
            await sleep(Math.min(r.waitMs ?? 5, 5));
            continue;
          }
          served.push(r.lease);
          await q.commit(r.lease);
          // Refill at once: the queue goes from empty to one item again.
          await q.enqueue(arena, 'refill', [`x${served.length}`]);
        }
      }),
    );
    const gaps = gapsUs(served);
    assert.ok(Math.min(...gaps) >= 20_000, `smallest gap ${Math.min(...gaps)} µs`);
  });

  it('tells idle callers when to come back, never before the next slot, by Redis time', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { slow: { rate: 2 } });
    await q.enqueue(arena, 'slow', ['a', 'b']);
    const first = await q.dequeue(arena);
    assert.ok(first.lease);
    const second = await q.dequeue(arena);
    assert.equal(second.lease, null);
    // The first caller was told of the next slot (500 ms on) and holds its claim,
    // so this one is sent to the slot after: never sooner than the first.
    assert.ok(second.waitMs !== null && second.waitMs > 400 && second.waitMs <= 1000, `waitMs ${second.waitMs}`);
    const third = await q.dequeue(arena);
    assert.ok(third.waitMs !== null && third.waitMs > 400 && third.waitMs <= 1000, `waitMs ${third.waitMs}`);
  });

  it('pause: no serve before the pause ends; a shorter later pause does not shorten it', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { p: { rate: 'unlimited' } });
    await q.enqueue(arena, 'p', ['a']);
    const until = await q.pause(arena, 'p', 400);
    const until2 = await q.pause(arena, 'p', 10);
    assert.equal(until2, until);
    const r = await q.dequeue(arena);
    assert.equal(r.lease, null);
    const l = await q.take(arena);
    assert.ok(l);
    assert.ok(l.servedAt >= until, `served ${l.servedAt} before pause end ${until}`);
  });
});

describe('fairness', () => {
  it('serves equal-rate busy queues round-robin when workers are the bottleneck (Jain >= 0.99)', async () => {
    const q = fx.queue();
    const arena = freshArena();
    const names = Array.from({ length: 20 }, (_, i) => `q${String(i).padStart(2, '0')}`);
    await q.setLimits(arena, Object.fromEntries(names.map((n) => [n, { rate: 100_000 }])));
    for (const n of names) await q.enqueue(arena, n, Array.from({ length: 100 }, (_, i) => `${n}-${i}`));
    const served = await drain(q, arena, 1000, 2);
    const counts = names.map((n) => served.filter((l) => l.queue === n).length);
    assert.ok(jain(counts) >= 0.99, `Jain ${jain(counts)} counts ${counts.join(',')}`);
  });

  it('a queue holding 100,000 items delays a 1-item queue by at most one turn of the other busy queues', async () => {
    const q = fx.queue();
    const arena = freshArena();
    const others = ['b1', 'b2', 'b3'];
    await q.setLimits(arena, Object.fromEntries(['huge', 'tiny', ...others].map((n) => [n, { rate: 'unlimited' }])));
    const big = Array.from({ length: 1000 }, (_, i) => `item-${i}-${'x'.repeat(40)}`);
    for (let i = 0; i < 100; i++) await q.enqueue(arena, 'huge', big);
    for (const o of others) await q.enqueue(arena, o, ['o1', 'o2', 'o3', 'o4', 'o5', 'o6', 'o7', 'o8']);
    // Let the huge queue and the others take several turns first.
    for (let i = 0; i < 10; i++) {
      const r = await q.dequeue(arena);
      assert.ok(r.lease);
      await q.commit(r.lease);
    }
    await q.enqueue(arena, 'tiny', ['t']);
    const order: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await q.dequeue(arena);
      assert.ok(r.lease);
      order.push(r.lease.queue);
      await q.commit(r.lease);
      if (r.lease.queue === 'tiny') break;
    }
    // 4 other busy queues: tiny is served within their one turn each, then itself.
    assert.ok(order.includes('tiny'), `order ${order.join(',')}`);
    assert.ok(order.length <= 5);
  });

  it('no queue starves when there are more queues than workers (the seed design starved late names)', async () => {
    const q = fx.queue();
    const arena = freshArena();
    const names = Array.from({ length: 30 }, (_, i) => `site-${String.fromCharCode(97 + (i % 26))}${i}`);
    await q.setLimits(arena, Object.fromEntries(names.map((n) => [n, { rate: 40 }])));
    for (const n of names) await q.enqueue(arena, n, ['a', 'b', 'c', 'd']);
    // One worker, 30 queues, each refilled as soon as it is served.
    const counts = new Map<string, number>();
    for (let i = 0; i < 90; i++) {
      const l = await q.take(arena);
      assert.ok(l);
      counts.set(l.queue, (counts.get(l.queue) ?? 0) + 1);
      await q.commit(l);
      await q.enqueue(arena, l.queue, ['again']);
    }
    for (const n of names) assert.ok((counts.get(n) ?? 0) >= 2, `${n} served ${counts.get(n) ?? 0} times`);
  });

  it('gives a slow queue its rate and the leftover to the others (max-min)', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { slow: { rate: 10 }, fastA: { rate: 'unlimited' }, fastB: { rate: 'unlimited' } });
    await q.enqueue(arena, 'slow', Array.from({ length: 50 }, (_, i) => `s${i}`));
    await q.enqueue(arena, 'fastA', Array.from({ length: 1000 }, (_, i) => `a${i}`));
    await q.enqueue(arena, 'fastB', Array.from({ length: 1000 }, (_, i) => `b${i}`));
    const served = await drain(q, arena, 600, 1);
    const slow = served.filter((l) => l.queue === 'slow');
    const a = served.filter((l) => l.queue === 'fastA').length;
    const b = served.filter((l) => l.queue === 'fastB').length;
    const spanUs = servedUs(served.at(-1) as Lease) - servedUs(served[0] as Lease);
    // slow never above 10/s; the two unlimited queues split the rest evenly.
    assert.ok(slow.length <= Math.floor(spanUs / 100_000) + 1, `slow ${slow.length} in ${spanUs} µs`);
    assert.ok(Math.abs(a - b) <= 1, `fastA ${a} fastB ${b}`);
  });

  it('serves a due rate-limited queue before queues that are merely ready (its whole rate among 20 always-ready queues), never under 1/R apart', async () => {
    const q = fx.queue();
    const arena = freshArena();
    const busy = Array.from({ length: 20 }, (_, i) => `busy${i}`);
    await q.setLimits(arena, { slow: { rate: 1 }, ...Object.fromEntries(busy.map((n) => [n, { rate: 'unlimited' as const }])) });
    await q.enqueue(arena, 'slow', Array.from({ length: 10 }, (_, i) => `s${i}`));
    for (const n of busy) await q.enqueue(arena, n, Array.from({ length: 3000 }, (_, i) => `${n}-${i}`));
    const served: Lease[] = [];
    const ac = new AbortController();
    const stop = setTimeout(() => ac.abort(), 4500);
    // Two workers, each lease held ~3 ms: the round-robin over 21 queues takes
    // ~30 ms, so the slow queue's 1/s is far below its fair share.
    await Promise.all(
      [0, 1].map(async () => {
        for (;;) {
          const l = await q.take(arena, { signal: ac.signal });
          if (!l) return;
          served.push(l);
          await sleep(3);
          await q.commit(l);
        }
      }),
    );
    clearTimeout(stop);
    const byTime = [...served].sort((x, y) => x.servedAt - y.servedAt);
    const slow = byTime.filter((l) => l.queue === 'slow');
    assert.ok(slow.length >= 4, `slow served ${slow.length} times in 4.5 s`);
    for (let i = 1; i < slow.length; i++) {
      const prev = slow[i - 1] as Lease;
      const cur = slow[i] as Lease;
      const slotUs = servedUs(prev) + 1_000_000;
      assert.ok(servedUs(cur) >= slotUs, `gap ${servedUs(cur) - servedUs(prev)} µs`);
      // Due first: no other queue is served between the slow queue's slot and its serve.
      const between = byTime.filter((l) => l.queue !== 'slow' && servedUs(l) > slotUs && servedUs(l) < servedUs(cur));
      assert.equal(between.length, 0, `${between.length} serves of ready queues went first (slot ${slotUs}, served ${servedUs(cur)})`);
    }
  });

  it('ahead: slots are served before they come, at their exact time, the next counted from the slot (full pace)', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { site: { rate: 50 } });
    await q.enqueue(arena, 'site', Array.from({ length: 30 }, (_, i) => `u${i}`));
    const served: Lease[] = [];
    const receivedEarly: number[] = [];
    const ac = new AbortController();
    await Promise.all(
      [0, 1, 2, 3].map(async () => {
        while (served.length < 30) {
          const l = await q.take(arena, { signal: ac.signal, aheadMs: 15 });
          if (!l) return;
          served.push(l);
          receivedEarly.push(l.localServedAt - performance.now());
          await q.commit(l);
          if (served.length >= 30) ac.abort();
        }
      }),
    );
    const gaps = gapsUs(served);
    assert.ok(Math.min(...gaps) >= 20_000, `smallest gap ${Math.min(...gaps)} µs`);
    // Slots back to back: most gaps are exactly the interval (a late call only delays its own slot).
    const exact = gaps.filter((g) => g === 20_000).length;
    assert.ok(exact >= gaps.length / 2, `${exact} of ${gaps.length} gaps exactly 20,000 µs`);
    assert.ok(receivedEarly.some((ms) => ms > 0), 'some leases arrived before their slot');
    await assert.rejects(q.dequeue(arena, { aheadMs: 1001 }), /aheadMs/);
  });
});

describe('in-flight cap', () => {
  it('never has more than maxInFlight leases of a queue out, under 8 concurrent workers', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { capped: { rate: 'unlimited', maxInFlight: 3 }, free: { rate: 'unlimited' } });
    await q.enqueue(arena, 'capped', Array.from({ length: 60 }, (_, i) => `c${i}`));
    await q.enqueue(arena, 'free', Array.from({ length: 60 }, (_, i) => `f${i}`));
    let out = 0;
    let peak = 0;
    let freeServed = 0;
    await drain(q, arena, 120, 8, async (l) => {
      if (l.queue !== 'capped') {
        freeServed++;
        return;
      }
      out++;
      peak = Math.max(peak, out);
      await sleep(5);
      // Counted down before the commit is sent: the local count can only lag the server's.
      out--;
    });
    assert.ok(peak <= 3, `peak ${peak}`);
    assert.equal(peak, 3);
    assert.equal(freeServed, 60);
    const s = await q.stats(arena);
    assert.equal(s.drained, true);
  });
});

describe('holds', () => {
  it('hold stops dequeues from one queue or the arena; unhold resumes and wakes a waiter', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { a: { rate: 'unlimited' }, b: { rate: 'unlimited' } });
    await q.enqueue(arena, 'a', ['a1']);
    await q.enqueue(arena, 'b', ['b1']);
    await q.hold(arena, 'a');
    const r1 = await q.dequeue(arena);
    assert.equal(r1.lease?.queue, 'b');
    await q.commit(r1.lease);
    const r2 = await q.dequeue(arena);
    assert.equal(r2.lease, null);
    assert.equal(r2.waitMs, null);
    const page = await q.queueStats(arena);
    assert.equal(page.queues.find((x) => x.name === 'a')?.held, true);
    await q.unhold(arena, 'a');
    await q.hold(arena);
    assert.equal((await q.dequeue(arena)).lease, null);
    assert.equal((await q.stats(arena)).held, true);
    const waiting = q.take(arena);
    await sleep(50);
    await q.unhold(arena);
    const l = await waiting;
    assert.equal(l?.queue, 'a');
  });
});
