/** Leases: tokens, expiry, attempts, retries, the dead letter and draining. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Lease } from '../../src/queue/index.js';
import { freshArena, sleep, useRedis } from '../helpers/fixture.js';
import { scriptCalls } from '../helpers/redis.js';

const fx = useRedis();

async function must(p: Promise<{ lease: Lease | null }>): Promise<Lease> {
  const r = await p;
  assert.ok(r.lease, 'expected a lease');
  return r.lease;
}

/** The lease expiries in an arena's `lexp`: its members at a finite score (the keeper is at +inf). */
const leaseExpiries = (arena: string): Promise<number> => fx.redis.zcount(`weir:{${arena}}:lexp`, '-inf', '(+inf');

describe('leases', () => {
  it('only the current holder can commit; a stale token changes nothing', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { a: { rate: 'unlimited' } });
    await q.enqueue(arena, 'a', ['one']);
    const l = await must(q.dequeue(arena, { leaseMs: 60_000 }));
    const forged: Lease = { ...l, token: 'not-a-real-token' };
    assert.equal(await q.commit(forged), 'stale');
    assert.equal(await q.extend(forged, 1000), 'stale');
    assert.equal(await q.release(forged), 'stale');
    assert.equal(await q.retry(forged), 'stale');
    assert.equal(await q.fail(forged, 'x'), 'stale');
    assert.equal((await q.stats(arena)).leased, 1);
    assert.equal(await q.commit(l), 'ok');
    assert.equal(await q.commit(l), 'stale');
    const s = await q.stats(arena);
    assert.deepEqual([s.queued, s.leased, s.done, s.drained], [0, 0, 1, true]);
  });

  it('a token names its slot and queue, so a commit reads both with the meta fields; a bare key, a wrong id or a bad one are handled', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { a: { rate: 'unlimited' } });
    await q.enqueue(arena, 'a', ['one', 'two', 'three']);
    const [l1, l2, l3] = [await must(q.dequeue(arena)), await must(q.dequeue(arena)), await must(q.dequeue(arena))];
    assert.match(l1.token, /^[\w-]+\.1:1$/);
    const stat = async (cmd: string): Promise<number> => Number(new RegExp(`cmdstat_${cmd}:calls=(\\d+)`).exec(await fx.redis.info('commandstats'))?.[1] ?? 0);
    const [hgets, hmgets] = [await stat('hget'), await stat('hmget')];
    assert.equal(await q.commit(l1), 'ok');
    // One read: the meta fields with the lease's record and its queue's (the token names both).
    assert.deepEqual([(await stat('hget')) - hgets, (await stat('hmget')) - hmgets], [0, 1]);
    // A bare key (a token from before ids rode in it) still commits; a wrong id is taken the long way.
    assert.equal(await q.commit({ ...l2, token: l2.token.split(':')[0] as string }), 'ok');
    assert.equal(await q.commit({ ...l3, token: `${l3.token.split(':')[0] as string}:999` }), 'ok');
    await assert.rejects(q.commit({ ...l3, token: 'x.1:not-an-id' }), { code: 'WEIR_BAD_ARGS' });
    const s = await q.stats(arena);
    assert.deepEqual([s.queued, s.leased, s.done], [0, 0, 3]);
    assert.deepEqual((await q.allQueueStats(arena)).map((r) => [r.name, r.leased, r.done]), [['a', 0, 3]]);
  });

  it('an expired lease comes back at the head of its queue once, counting an attempt; its late commit is stale', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { a: { rate: 'unlimited' } });
    await q.enqueue(arena, 'a', ['first', 'second']);
    const l1 = await must(q.dequeue(arena, { leaseMs: 100 }));
    assert.equal(l1.item, 'first');
    assert.equal(l1.attempt, 1);
    await sleep(150);
    const l2 = await must(q.dequeue(arena, { leaseMs: 60_000 }));
    assert.equal(l2.item, 'first', 'expired item is back at the head');
    assert.equal(l2.attempt, 2);
    // The first holder wakes up late: its commit must not touch the new lease.
    assert.equal(await q.commit(l1), 'stale');
    assert.equal((await q.stats(arena)).leased, 1);
    assert.equal(await q.commit(l2), 'ok');
    const l3 = await must(q.dequeue(arena));
    assert.equal(l3.item, 'second');
    assert.equal(l3.attempt, 1);
  });

  it('a commit that arrives after expiry but before any dequeue is stale and returns the item exactly once', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { a: { rate: 'unlimited' } });
    await q.enqueue(arena, 'a', ['x']);
    const l = await must(q.dequeue(arena, { leaseMs: 50 }));
    await sleep(100);
    assert.equal(await q.commit(l), 'stale');
    assert.equal(await q.extend(l), 'stale');
    const s = await q.stats(arena);
    assert.deepEqual([s.queued, s.leased], [1, 0]);
  });

  it('commitAndTake: the commit and the next lease in one script call; an expired lease is reported stale; stopped, it commits alone', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { a: { rate: 'unlimited', maxInFlight: 1 } });
    await q.enqueue(arena, 'a', ['1', '2', '3', '4']);
    const calls = (): Promise<number> => scriptCalls(fx.redis);
    const first = await must(q.dequeue(arena));
    const before = await calls();
    // At its in-flight cap of 1 the queue has nothing for anyone until the commit: one call does both.
    const { committed, next } = q.commitAndTake(first);
    assert.equal(await committed, 'ok');
    const second = await next;
    assert.equal(second?.item, '2');
    assert.equal(await calls(), before + 1);
    // A lease that expired is stale for its late commit; the next lease still comes.
    assert.equal(await q.commit(second), 'ok');
    const third = await must(q.dequeue(arena, { leaseMs: 50 }));
    await sleep(120);
    const late = q.commitAndTake(third);
    assert.equal(await late.committed, 'stale');
    const again = await late.next;
    assert.equal(again?.item, '3', "the expired lease's item came back first");
    assert.equal(again?.attempt, 2);
    // Stopped before it starts: the commit still goes, and no lease is taken.
    const ac = new AbortController();
    ac.abort();
    const stopped = q.commitAndTake(again, { signal: ac.signal });
    assert.equal(await stopped.committed, 'ok');
    assert.equal(await stopped.next, null);
    const s = await q.stats(arena);
    assert.deepEqual([s.queued, s.leased, s.done], [1, 0, 3]);
  });

  it('an unlimited queue at its in-flight cap: any lease\'s commit rides in the next take, which gets the freed place (one call, nobody woken)', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { a: { rate: 'unlimited', maxInFlight: 2 } });
    await q.enqueue(arena, 'a', ['1', '2', '3', '4']);
    // The second lease takes the queue to its cap; the first did not, yet its commit frees the cap too.
    const first = await must(q.dequeue(arena));
    await must(q.dequeue(arena));
    const before = await scriptCalls(fx.redis);
    const wakeups = q.counters.wakeups;
    const { committed, next } = q.commitAndTake(first);
    assert.equal(await committed, 'ok');
    assert.equal((await next)?.item, '3');
    assert.equal(await scriptCalls(fx.redis), before + 1, 'the commit and the take in one call');
    assert.equal(q.counters.wakeups, wakeups);
  });

  it("a commit carried in a take hands its slot to the new lease: nothing deleted or added, and the old token is stale for everything", async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { a: { rate: 'unlimited' } });
    await q.enqueue(arena, 'a', ['1', '2', '3']);
    const first = await must(q.dequeue(arena));
    const stat = async (cmd: string): Promise<number> => Number(new RegExp(`cmdstat_${cmd}:calls=(\\d+)`).exec(await fx.redis.info('commandstats'))?.[1] ?? 0);
    const [hdels, zrems] = [await stat('hdel'), await stat('zrem')];
    const { committed, next } = q.commitAndTake(first);
    assert.equal(await committed, 'ok');
    const second = (await next) as Lease;
    assert.equal(second.item, '2');
    assert.deepEqual([(await stat('hdel')) - hdels, (await stat('zrem')) - zrems], [0, 0], 'the slot was written over, its expiry moved');
    const slot = first.token.split(':')[0] as string;
    assert.ok(second.token.startsWith(`${slot}|`), second.token);
    assert.equal(await leaseExpiries(arena), 1);
    // The first lease's token names the slot, which now holds another lease: stale for every call.
    assert.equal(await q.extend(first, 1000), 'stale');
    assert.equal(await q.release(first), 'stale');
    assert.equal(await q.retry(first), 'stale');
    assert.equal(await q.fail(first, 'x'), 'stale');
    assert.equal(await q.commit(first), 'stale');
    assert.deepEqual([(await q.stats(arena)).leased, (await q.stats(arena)).queued], [1, 1]);
    // The second lease is whole: extended, then committed once however often its token comes in one call.
    assert.notEqual(await q.extend(second, 60_000), 'stale');
    const third = await must(q.dequeue(arena));
    const twice = await Promise.all([q.commit(second), q.commit(second), q.commit(third)]);
    assert.deepEqual(twice.sort(), ['ok', 'ok', 'stale']);
    const s = await q.stats(arena);
    assert.deepEqual([s.queued, s.leased, s.done, s.drained], [0, 0, 3, true]);
    assert.equal(await leaseExpiries(arena), 0);
  });

  it('extend keeps a lease alive past its first expiry', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { a: { rate: 'unlimited' } });
    await q.enqueue(arena, 'a', ['slow']);
    const l = await must(q.dequeue(arena, { leaseMs: 150 }));
    const before = l.expiresAt;
    for (let i = 0; i < 4; i++) {
      await sleep(75);
      assert.equal(await q.extend(l, 150), 'ok');
    }
    assert.ok(l.expiresAt > before);
    assert.equal((await q.dequeue(arena)).lease, null, 'still leased, not redelivered');
    assert.equal(await q.commit(l), 'ok');
  });

  it('dead-letters an item after maxAttempts with its last reason; requeueDead brings it back fresh', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { a: { rate: 'unlimited' } }, { maxAttempts: 3 });
    await q.enqueue(arena, 'a', ['poison']);
    const results: string[] = [];
    for (let i = 1; i <= 3; i++) {
      const l = await must(q.dequeue(arena));
      assert.equal(l.attempt, i);
      results.push(await q.retry(l, { reason: `boom ${i}` }));
    }
    assert.deepEqual(results, ['ok', 'ok', 'dead']);
    assert.equal((await q.dequeue(arena)).lease, null);
    const s = await q.stats(arena);
    assert.deepEqual([s.dead, s.queued, s.drained], [1, 0, true]);
    const dead = await q.dead(arena);
    assert.equal(dead.length, 1);
    assert.deepEqual([dead[0]?.queue, dead[0]?.item, dead[0]?.reason, dead[0]?.attempts], ['a', 'poison', 'boom 3', 3]);
    assert.equal(await q.requeueDead(arena, 10), 1);
    const again = await must(q.dequeue(arena));
    assert.equal(again.item, 'poison');
    assert.equal(again.attempt, 1);
    assert.equal((await q.stats(arena)).dead, 0);
  });

  it('expiries count as attempts too, so a worker-killing item ends in the dead letter', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { a: { rate: 'unlimited' } }, { maxAttempts: 2 });
    await q.enqueue(arena, 'a', ['crashy']);
    await must(q.dequeue(arena, { leaseMs: 20 }));
    await sleep(40);
    await must(q.dequeue(arena, { leaseMs: 20 }));
    await sleep(40);
    assert.equal((await q.dequeue(arena)).lease, null);
    const dead = await q.dead(arena);
    assert.equal(dead[0]?.reason, 'lease expired');
    assert.equal(dead[0]?.attempts, 2);
  });

  it('retry without counting (Retry-After) and release never use up attempts', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { a: { rate: 'unlimited' } }, { maxAttempts: 2 });
    await q.enqueue(arena, 'a', ['paced']);
    for (let i = 0; i < 5; i++) {
      const l = await must(q.dequeue(arena));
      assert.equal(l.attempt, 1);
      assert.equal(i % 2 === 0 ? await q.retry(l, { countAttempt: false, reason: 'retry-after' }) : await q.release(l), 'ok');
    }
    assert.equal((await q.stats(arena)).dead, 0);
  });

  it('a delayed retry is not served before its delay, by Redis time, and counts as delayed meanwhile', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { a: { rate: 'unlimited' } });
    await q.enqueue(arena, 'a', ['later']);
    const l = await must(q.dequeue(arena));
    const t0 = (await q.stats(arena)).now;
    assert.equal(await q.retry(l, { delayMs: 300, reason: 'http 503' }), 'ok');
    const s = await q.stats(arena);
    assert.deepEqual([s.delayed, s.queued, s.leased, s.drained], [1, 0, 0, false]);
    const r = await q.dequeue(arena);
    assert.equal(r.lease, null);
    assert.ok(r.waitMs !== null && r.waitMs > 200);
    const back = await q.take(arena);
    assert.ok(back);
    assert.ok(back.servedAt >= t0 + 300, `served ${back.servedAt - t0} ms after the retry`);
    assert.equal(back.attempt, 2);
  });

  it('revisit: done now, due again after its delay at the tail (behind items queued meanwhile) with no attempts and the new item; stale changes nothing', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { a: { rate: 'unlimited' } }, { maxAttempts: 2 });
    await q.enqueue(arena, 'a', ['page']);
    const first = await must(q.dequeue(arena));
    // A retry counted first: the revisit still comes back with no attempts.
    assert.equal(await q.retry(first, { reason: 'http 503' }), 'ok');
    const l = await must(q.dequeue(arena));
    assert.equal(l.attempt, 2);
    const t0 = (await q.stats(arena)).now;
    assert.equal(await q.revisit(l, { delayMs: 300, item: 'page v2' }), 'ok');
    assert.equal(await q.revisit(l, { delayMs: 300 }), 'stale', 'a lease ends once');
    let s = await q.stats(arena);
    assert.deepEqual([s.done, s.delayed, s.queued, s.leased, s.drained], [1, 1, 0, 0, false], 'done, and waiting: not drained');
    await q.enqueue(arena, 'a', ['new1']);
    const new1 = await must(q.dequeue(arena));
    assert.equal(new1.item, 'new1');
    assert.equal(await q.commit(new1), 'ok');
    await q.enqueue(arena, 'a', ['new2']);
    await sleep(350);
    // Due: it joins the tail, after new2 (a retry would have gone before it).
    const order: Lease[] = [];
    for (let r = await q.dequeue(arena); r.lease; r = await q.dequeue(arena)) order.push(r.lease);
    assert.deepEqual(order.map((x) => x.item), ['new2', 'page v2']);
    const back = order[1] as Lease;
    assert.ok(back.servedAt >= t0 + 300, `served ${back.servedAt - t0} ms after the revisit`);
    assert.equal(back.attempt, 1, 'no attempts carried');
    assert.equal(await q.commit(order[0] as Lease), 'ok');
    // Revisited again and again: never dead-lettered (maxAttempts is 2).
    assert.equal(await q.revisit(back, { delayMs: 1 }), 'ok');
    await sleep(5);
    const again = await must(q.dequeue(arena));
    assert.deepEqual([again.item, again.attempt], ['page v2', 1]);
    assert.equal(await q.commit(again), 'ok');
    s = await q.stats(arena);
    assert.deepEqual([s.done, s.delayed, s.dead, s.drained], [5, 0, 0, true]);
    await assert.rejects(q.revisit(again, { delayMs: 0 }), { code: 'WEIR_BAD_ARGS' });
  });

  it('fail sends the item straight to the dead letter', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { a: { rate: 'unlimited' } });
    await q.enqueue(arena, 'a', ['bad']);
    const l = await must(q.dequeue(arena));
    assert.equal(await q.fail(l, 'robots.txt unreachable'), 'ok');
    assert.deepEqual((await q.dead(arena)).map((d) => d.reason), ['robots.txt unreachable']);
  });

  it('expired leases come back and can all be dequeued again (the seed design stranded 20,000 of 20,000)', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { a: { rate: 'unlimited' }, b: { rate: 'unlimited' } });
    const n = 2000;
    await q.enqueue(arena, 'a', Array.from({ length: n }, (_, i) => `a${i}`));
    await q.enqueue(arena, 'b', Array.from({ length: n }, (_, i) => `b${i}`));
    const leases: Lease[] = [];
    for (let i = 0; i < 2 * n; i += 100) {
      const batch = await Promise.all(Array.from({ length: 100 }, () => must(q.dequeue(arena, { leaseMs: 1500 }))));
      leases.push(...batch);
    }
    assert.equal((await q.stats(arena)).queued, 0);
    const lastExpiry = Math.max(...leases.map((l) => l.expiresAt));
    await sleep(lastExpiry - (await q.stats(arena)).now + 50);
    const seen = new Set<string>();
    for (;;) {
      const r = await q.dequeue(arena);
      if (!r.lease) break;
      seen.add(r.lease.item);
      await q.commit(r.lease);
    }
    assert.equal(seen.size, 2 * n);
    const s = await q.stats(arena);
    assert.deepEqual([s.queued, s.leased, s.done, s.drained], [0, 0, 2 * n, true]);
  });
});

describe('waiting', () => {
  it('an enqueue wakes a worker blocked in an idle arena at once', async () => {
    const q = fx.queue();
    const producer = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { a: { rate: 'unlimited' } });
    const started = Date.now();
    const taking = q.take(arena);
    await sleep(300);
    await producer.enqueue(arena, 'a', ['wake']);
    const l = await taking;
    assert.equal(l?.item, 'wake');
    // The idle re-check runs every 5 s; a wake-up must beat it by far.
    assert.ok(Date.now() - started < 3000, `took ${Date.now() - started} ms`);
    assert.ok(q.counters.wakeups >= 1);
  });

  it('a worker waiting on a slow queue makes a bounded number of calls (no busy polling)', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { slow: { rate: 2 } });
    await q.enqueue(arena, 'slow', ['a', 'b', 'c']);
    const before = q.counters.dequeues;
    for (let i = 0; i < 3; i++) {
      const l = await q.take(arena);
      assert.ok(l);
      await q.commit(l);
    }
    // 3 items 500 ms apart: one call each plus a few timer wake-ups.
    assert.ok(q.counters.dequeues - before <= 9, `${q.counters.dequeues - before} dequeues for 3 items`);
  });

  it('a spent promise does not send a worker back to Redis again and again while its queue is at its in-flight cap', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { a: { rate: 'unlimited', maxInFlight: 2 } });
    await q.enqueue(arena, 'a', ['1', '2', '3']);
    // The first lease leaves the queue ready: its reply promises it to us at once.
    assert.ok((await q.dequeue(arena)).lease);
    // The second fills the cap: its reply has no promise, and the first one is spent.
    assert.ok(await q.take(arena));
    const before = q.counters.dequeues;
    const ac = new AbortController();
    const waiting = q.take(arena, { signal: ac.signal });
    await sleep(500);
    ac.abort();
    assert.equal(await waiting, null);
    // Nothing can be served until a commit: one look, then a wait (the bug was thousands).
    assert.ok(q.counters.dequeues - before <= 2, `${q.counters.dequeues - before} dequeues in 500 ms`);
  });

  it('take resolves null when aborted', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { a: { rate: 'unlimited' } });
    const ac = new AbortController();
    const p = q.take(arena, { signal: ac.signal });
    await sleep(50);
    ac.abort();
    assert.equal(await p, null);
  });
});
