/** Spare leases (FairQueueOptions.spareLeases): served only from queues without a rate, kept for the next takes, handed back on close. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Lease } from '../../src/queue/index.js';
import { freshArena, sleep, useRedis } from '../helpers/fixture.js';
import { scriptCalls } from '../helpers/redis.js';

const fx = useRedis();

async function must(p: Promise<Lease | null>): Promise<Lease> {
  const l = await p;
  assert.ok(l, 'expected a lease');
  return l;
}

describe('spare leases', () => {
  it('come only from queues without a rate, due now; a due rate-limited head ends them and keeps its turn; takes with a spare make no call', async () => {
    const q = fx.queue({ spareLeases: 3 });
    const arena = freshArena();
    await q.setLimits(arena, { free: { rate: 'unlimited' }, paced: { rate: 0.001 } });
    await q.enqueue(arena, 'free', ['f1', 'f2', 'f3', 'f4', 'f5', 'f6']);
    await q.enqueue(arena, 'paced', ['p1', 'p2']);
    // The plain dequeue API never asks for spares.
    const plain = await q.dequeue(arena);
    assert.equal(plain.lease?.item, 'f1');
    assert.equal((await q.stats(arena)).leased, 1);
    // The round-robin: paced (due: its first slot), then free. A take serves
    // paced; no spare follows a rate-limited serve.
    const first = await must(q.take(arena));
    assert.deepEqual([first.item, q.counters.dequeues], ['p1', 2]);
    // Then free, and three spares from it (paced now waits for its next slot, in 1,000 s).
    const second = await must(q.take(arena));
    assert.deepEqual([second.item, q.counters.dequeues], ['f2', 3]);
    assert.equal((await q.stats(arena)).leased, 6);
    const calls = await scriptCalls(fx.redis);
    const spares = [await must(q.take(arena)), await must(q.take(arena)), await must(q.take(arena))];
    assert.deepEqual(
      spares.map((l) => [l.item, l.queue, l.intervalMs]),
      [
        ['f3', 'free', 0],
        ['f4', 'free', 0],
        ['f5', 'free', 0],
      ],
    );
    assert.equal(q.counters.dequeues, 3, 'no dequeue call for a spare');
    assert.equal((await scriptCalls(fx.redis)) - calls, 0);
    // None left: the next take calls again.
    assert.equal((await must(q.take(arena))).item, 'f6');
    assert.equal(q.counters.dequeues, 4);
    const s = await q.allQueueStats(arena);
    assert.deepEqual(
      s.map((r) => [r.name, r.queued, r.leased]),
      [
        ['free', 0, 6],
        ['paced', 1, 1],
      ],
    );
    await q.close();
  });

  it('a rate-limited head at the time of the spares stops them without losing its place', async () => {
    const q = fx.queue({ spareLeases: 3 });
    const arena = freshArena();
    await q.setLimits(arena, { free: { rate: 'unlimited' }, paced: { rate: 0.001 } });
    await q.enqueue(arena, 'free', ['f1', 'f2', 'f3']);
    await q.enqueue(arena, 'paced', ['p1']);
    // free is served and goes behind paced: paced, due, is the head when the spares are looked for.
    assert.equal((await must(q.take(arena))).item, 'f1');
    assert.equal((await q.stats(arena)).leased, 1, 'no spare past a due rate-limited head');
    // paced kept its turn.
    assert.equal((await must(q.take(arena))).item, 'p1');
    await q.close();
  });

  it("never take a queue's last place below its in-flight cap", async () => {
    const q = fx.queue({ spareLeases: 5 });
    const arena = freshArena();
    await q.setLimits(arena, { a: { rate: 'unlimited', maxInFlight: 3 } });
    await q.enqueue(arena, 'a', ['1', '2', '3', '4', '5']);
    assert.equal((await must(q.take(arena))).item, '1');
    // One spare: a third lease would fill the cap.
    assert.equal((await q.stats(arena)).leased, 2);
    assert.equal((await must(q.take(arena))).item, '2');
    assert.equal((await must(q.take(arena))).item, '3', "the cap's last place goes to a take that asks for it");
    assert.equal((await q.stats(arena)).leased, 3);
    await q.close();
  });

  it('none are asked for while a take of the same client waits for work (it would not see them)', async () => {
    const q = fx.queue({ spareLeases: 3 });
    const [idle, busy] = [freshArena(), freshArena()];
    await q.setLimits(busy, { a: { rate: 'unlimited' } });
    await q.enqueue(busy, 'a', ['1', '2', '3', '4', '5', '6']);
    const ac = new AbortController();
    const waiting = q.take(idle, { signal: ac.signal });
    await sleep(100);
    assert.equal((await must(q.take(busy))).item, '1');
    assert.equal((await q.stats(busy)).leased, 1, 'no spares while a take waits');
    ac.abort();
    assert.equal(await waiting, null);
    assert.equal((await must(q.take(busy))).item, '2');
    assert.equal((await q.stats(busy)).leased, 5, 'spares once none waits');
    await q.close();
  });

  it('commitAndTake with a spare held: the spare at once; the commit rides on the next call to its shard, or goes alone', async () => {
    const q = fx.queue({ spareLeases: 2 });
    const arena = freshArena();
    await q.setLimits(arena, { a: { rate: 'unlimited' } });
    await q.enqueue(arena, 'a', ['1', '2', '3', '4', '5', '6']);
    const l1 = await must(q.take(arena));
    assert.equal(q.counters.dequeues, 1);
    // With no call to carry it, the commit goes alone (DEFAULTS.commitRideMs).
    const s1 = q.commitAndTake(l1);
    const l2 = await must(s1.next);
    assert.equal(q.counters.dequeues, 1);
    assert.equal(await s1.committed, 'ok');
    assert.equal((await q.stats(arena)).done, 1);
    // Two steps: the first takes the last spare, its commit rides on the second's call.
    const calls = await scriptCalls(fx.redis);
    const s2 = q.commitAndTake(l2);
    const l3 = await must(s2.next);
    const s3 = q.commitAndTake(l3);
    const l4 = await must(s3.next);
    assert.deepEqual(await Promise.all([s2.committed, s3.committed]), ['ok', 'ok']);
    assert.equal((await scriptCalls(fx.redis)) - calls, 1, 'both commits and the take in one script call');
    assert.equal(l4.item, '4');
    const s = await q.stats(arena);
    assert.deepEqual([s.done, s.leased, s.queued], [3, 3, 0]);
    await q.close();
  });

  it('close() hands the spares back to the heads of their queues; a spare past half its lease is handed back, not served', async () => {
    const q = fx.queue({ spareLeases: 3 });
    const arena = freshArena();
    await q.setLimits(arena, { a: { rate: 'unlimited' } });
    await q.enqueue(arena, 'a', ['1', '2', '3', '4', '5', '6', '7', '8']);
    assert.equal((await must(q.take(arena, { leaseMs: 60_000 }))).item, '1');
    assert.equal((await q.stats(arena)).leased, 4);
    await q.close();
    let s = await q.stats(arena);
    assert.deepEqual([s.leased, s.queued], [1, 7]);
    const again = fx.queue({ spareLeases: 3 });
    const l = await must(again.take(arena, { leaseMs: 400 }));
    assert.equal(l.item, '2', 'the spares went back to the head, in order');
    assert.equal(l.attempt, 1, 'a spare handed back counts no attempt');
    await sleep(250);
    // Its spares have under half their 400 ms left: handed back, and the take calls again.
    const fresh = await must(again.take(arena, { leaseMs: 400 }));
    assert.equal(again.counters.dequeues, 2);
    assert.ok(fresh.expiresAt - Date.now() > 250, 'a fresh lease');
    for (let i = 0; i < 50 && (await again.stats(arena)).leased !== 6; i++) await sleep(20);
    s = await again.stats(arena);
    assert.deepEqual([s.leased, s.queued, s.done], [6, 2, 0], 'nothing lost: 1 + 1 + 4 leased (3 new spares), the rest queued');
    await again.close();
  });
});
