/**
 * Takes of one client that wait for work: one waits on the timer or the wake
 * lists, the others park behind it (src/queue/waiting.ts) and are released
 * by the replies that follow. None may be left parked while work is there.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Lease } from '../../src/queue/index.js';
import { freshArena, useRedis } from '../helpers/fixture.js';

const fx = useRedis();

/** Resolves with the takes' leases, or rejects naming how many came by `ms`. */
async function allWithin(takes: Promise<Lease | null>[], ms: number): Promise<Lease[]> {
  let came = 0;
  let timer: NodeJS.Timeout | undefined;
  const counted = takes.map((t) => t.then((l) => (came++, l)));
  try {
    const all = await Promise.race([
      Promise.all(counted),
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${came} of ${takes.length} takes served within ${ms} ms`)), ms))),
    ]);
    return all.map((l) => {
      assert.ok(l);
      return l;
    });
  } finally {
    clearTimeout(timer);
  }
}

describe('waiting takes', () => {
  it('six takes waiting on one rate-limited queue are served one slot each, none left parked', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { paced: { rate: 20 } });
    await q.enqueue(arena, 'paced', ['a']);
    const first = await q.take(arena);
    assert.ok(first);
    await q.commit(first);
    await q.enqueue(arena, 'paced', ['b', 'c', 'd', 'e', 'f', 'g']);
    const t0 = performance.now();
    // Five slots of 50 ms after the next: about 300 ms. A take left parked would
    // wait for the idle re-check (5 s) or for ever.
    const leases = await allWithin(
      Array.from({ length: 6 }, () => q.take(arena)),
      3000,
    );
    assert.deepEqual(leases.map((l) => l.item).sort(), ['b', 'c', 'd', 'e', 'f', 'g']);
    const served = leases.map((l) => l.servedAt).sort((x, y) => x - y);
    for (let i = 1; i < served.length; i++) assert.ok((served[i] as number) - (served[i - 1] as number) >= 50, `serves ${i - 1} and ${i} under 1/R apart`);
    assert.ok(performance.now() - t0 < 3000);
    await Promise.all(leases.map((l) => q.commit(l)));
  });

  it('eight takes blocked on an empty arena are each served when work comes to eight queues', async () => {
    const q = fx.queue();
    const producer = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`q${i}`, { rate: 'unlimited' as const }])));
    const takes = Array.from({ length: 8 }, () => q.take(arena));
    // (Let them all find nothing and wait.)
    await new Promise((r) => setTimeout(r, 200));
    for (let i = 0; i < 8; i++) await producer.enqueue(arena, `q${i}`, [`item${i}`]);
    // Well under the idle re-check (5 s): each must be released by a reply or a wake-up.
    const leases = await allWithin(takes, 2500);
    assert.deepEqual(leases.map((l) => l.item).sort(), Array.from({ length: 8 }, (_, i) => `item${i}`));
    await Promise.all(leases.map((l) => q.commit(l)));
  });

  it('an aborted take that was parked ends with null at once', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { empty: { rate: 'unlimited' } });
    const stops = Array.from({ length: 4 }, () => new AbortController());
    const takes = stops.map((s) => q.take(arena, { signal: s.signal }));
    await new Promise((r) => setTimeout(r, 100));
    const t0 = performance.now();
    for (const s of stops) s.abort();
    assert.deepEqual(await Promise.all(takes), [null, null, null, null]);
    assert.ok(performance.now() - t0 < 1000);
  });
});
