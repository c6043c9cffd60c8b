/**
 * The backlog index (lua/includes/record.lua, KEYS[14]): every queue of 16
 * URLs or more sits in its count's bucket (one per power of two), and no
 * queue of fewer (bucket 0, found by id), whatever mix of operations moved
 * it there, so the biggest backlogs are found without reading every queue
 * (stats.lua 'top', FairQueue.busiestQueues).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FairQueue, type Lease } from '../../src/queue/index.js';
import { arenaKey } from '../../src/queue/keys.js';
import { freshArena, useRedis } from '../helpers/fixture.js';

const fx = useRedis();

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const bucket = (q: number): number => (q < 16 ? 0 : Math.floor(Math.log2(q)) - 3);

/** Each queue's place in the index against its count: its bucket, or out of the index below 16. Returns the queues' count. */
async function assertIndexed(q: FairQueue, arena: string): Promise<number> {
  const index = await fx.redis.zrange(arenaKey('weir', arena, 'backlog'), 0, -1, 'WITHSCORES');
  const scores = new Map<string, number>();
  for (let i = 0; i < index.length; i += 2) scores.set(index[i] as string, Number(index[i + 1]));
  const qids = await fx.redis.hgetall(arenaKey('weir', arena, 'qids'));
  const stats = await q.allQueueStats(arena);
  for (const s of stats) assert.equal(scores.get(qids[s.name] as string), bucket(s.queued) || undefined, `${s.name}: ${s.queued} queued`);
  assert.equal(scores.size, stats.filter((s) => s.queued >= 16).length, 'every queue of 16 or more indexed, once; none of fewer');
  return stats.length;
}

describe('backlog index', () => {
  it('follows every queue through 3,000 random enqueues, serves, commits, releases, retries, failures and purges', async () => {
    const q = new FairQueue(fx.redis);
    const arena = freshArena('bix');
    const r = rng(11);
    const names = Array.from({ length: 40 }, (_, i) => `q${i}`);
    await q.setLimits(arena, Object.fromEntries(names.map((n) => [n, { rate: 'unlimited' as const }])), { maxAttempts: 3 });
    const out: Lease[] = [];
    let n = 0;
    for (let step = 0; step < 3000; step++) {
      const p = r();
      const name = names[Math.floor(r() * names.length)] as string;
      if (p < 0.4) {
        const k = 1 + Math.floor(r() * (r() < 0.1 ? 300 : 5));
        await q.enqueue(arena, name, Array.from({ length: k }, () => `i${n++}`), r() < 0.2 ? { front: true } : {});
      } else if (p < 0.7) {
        const got = await q.dequeue(arena);
        if (got.lease) out.push(got.lease);
      } else if (out.length > 0) {
        const lease = out.splice(Math.floor(r() * out.length), 1)[0] as Lease;
        const how = r();
        if (how < 0.5) await q.commit(lease);
        else if (how < 0.7) await q.release(lease);
        else if (how < 0.9) await q.retry(lease, { delayMs: 0 });
        else await q.fail(lease, 'test');
      } else if (p > 0.995) {
        await q.purge(arena, name);
      }
      if (step % 500 === 499) await assertIndexed(q, arena);
    }
    assert.equal(await assertIndexed(q, arena), 40);
    await q.close();
  });

  it('a queue leaves the index when it falls below 16 and is found by id; an index from before 2026-12-06, with queues of fewer at 0, still ranks right', async () => {
    const q = new FairQueue(fx.redis);
    const arena = freshArena('bix-down');
    const key = arenaKey('weir', arena, 'backlog');
    await q.setLimits(arena, { deep: { rate: 'unlimited' }, small: { rate: 'unlimited' }, empty: { rate: 'unlimited' } });
    await q.enqueue(arena, 'deep', Array.from({ length: 20 }, (_, i) => `d${i}`));
    assert.equal(await fx.redis.zscore(key, (await fx.redis.hget(arenaKey('weir', arena, 'qids'), 'deep')) as string), '1', 'deep, at 20, in bucket 1');
    // Five served and committed (the only queue with URLs): 15 left, out of the index.
    for (let i = 0; i < 5; i++) {
      const got = await q.dequeue(arena);
      assert.equal(got.lease?.queue, 'deep');
      await q.commit(got.lease);
    }
    await q.enqueue(arena, 'small', ['s1', 's2', 's3']);
    const deep = (await q.namedQueueStats(arena, ['deep']))[0];
    assert.equal(deep?.queued, 15);
    assert.equal(await assertIndexed(q, arena), 3);
    assert.equal(await fx.redis.zcard(key), 0, 'nothing of 16 or more');
    const top = await q.busiestQueues(arena, 'backlog', 5);
    assert.deepEqual(top?.queues.map((s) => [s.name, s.queued]), [['deep', 15], ['small', 3]]);
    assert.equal(top?.exact, true);
    // An older release kept every queue, at 0 below 16: those members are never read, and leave as their queues move.
    const ids = await fx.redis.hgetall(arenaKey('weir', arena, 'qids'));
    await fx.redis.zadd(key, 0, ids.small as string, 0, ids.empty as string, 0, ids.deep as string);
    assert.deepEqual((await q.busiestQueues(arena, 'backlog', 5))?.queues.map((s) => s.name), ['deep', 'small']);
    assert.deepEqual((await q.busiestQueues(arena, 'backlog', 1, 1))?.queues.map((s) => s.name), ['small']);
    await q.enqueue(arena, 'small', Array.from({ length: 30 }, (_, i) => `more${i}`));
    assert.equal(await fx.redis.zscore(key, ids.small as string), '2', 'small, at 33, in bucket 2');
    assert.deepEqual((await q.busiestQueues(arena, 'backlog', 5))?.queues.map((s) => [s.name, s.queued]), [['small', 33], ['deep', 15]]);
    await q.purge(arena, 'small');
    assert.equal(await fx.redis.zscore(key, ids.small as string), null, 'purged: out of the index');
    await q.close();
  });

  it('busiestQueues: the biggest backlogs, as a read of every queue ranks them; exact unless a bucket is cut; paged; by name; on 3 shards; and not for an arena made before the index', async () => {
    const q = new FairQueue(fx.redis);
    for (const shards of [1, 3]) {
      const arena = freshArena(`busiest${shards}`);
      await q.fixShards(arena, shards);
      const limit = { rate: 'unlimited' as const };
      await q.setLimits(arena, Object.fromEntries([...Array.from({ length: 60 }, (_, i) => `big${i}`), ...Array.from({ length: 2000 }, (_, i) => `one${i}`)].map((n) => [n, limit])));
      // 60 queues of distinct sizes (20 and up) and 2,000 of two or three URLs (30 of three).
      for (let i = 0; i < 60; i++) await q.enqueue(arena, `big${i}`, Array.from({ length: 20 + i * 7 }, (_, j) => `b${i}.${j}`));
      await Promise.all(Array.from({ length: 2000 }, (_, i) => q.enqueue(arena, `one${i}`, Array.from({ length: i % 66 === 0 ? 3 : 2 }, (_, j) => `o${i}.${j}`))));
      const all = (await q.allQueueStats(arena)).sort((a, b) => b.queued - a.queued);
      const top = await q.busiestQueues(arena, 'backlog', 25);
      assert.ok(top);
      assert.equal(top.exact, true);
      assert.deepEqual(top.queues.map((s) => s.name), all.slice(0, 25).map((s) => s.name));
      // 100 wanted, 60 big: the rest from a bucket read in part (queues of 2 and 3 URLs), so a 3 may be left out for a 2.
      const cut = await q.busiestQueues(arena, 'backlog', 100);
      assert.ok(cut);
      assert.deepEqual(cut.queues.slice(0, 60).map((s) => s.name), all.slice(0, 60).map((s) => s.name));
      const rest = cut.queues.slice(60).map((s) => s.queued);
      assert.deepEqual(rest, [...rest].sort((a, b) => b - a), 'ranked by count');
      assert.ok(rest.every((n) => n === 2 || n === 3) && rest.includes(2));
      assert.equal(cut.exact, false);
      const waiting = await q.busiestQueues(arena, 'waiting', 10);
      assert.equal(waiting?.queues.length, 10);
      // Pages further down: consecutive pages are the order read at once, neither repeating nor skipping a queue.
      const pages: string[] = [];
      for (let offset = 0; offset < 60; offset += 7) {
        const page = await q.busiestQueues(arena, 'backlog', Math.min(7, 60 - offset), offset);
        assert.equal(page?.exact, true, `page at ${offset}`);
        pages.push(...(page?.queues ?? []).map((s) => s.name));
      }
      assert.deepEqual(pages, all.slice(0, 60).map((s) => s.name));
      const across = await q.busiestQueues(arena, 'backlog', 10, 55);
      assert.deepEqual(across?.queues.slice(0, 5).map((s) => s.name), all.slice(55, 60).map((s) => s.name));
      assert.equal(across?.exact, false, 'its last rows come from the bucket read in part');
      assert.deepEqual((await q.busiestQueues(arena, 'waiting', 5, 5))?.queues.map((s) => s.name), waiting?.queues.slice(5).map((s) => s.name));
      await assert.rejects(q.busiestQueues(arena, 'backlog', 500, 9501), /offset/);
      const named = await q.namedQueueStats(arena, ['big3', 'nothere', 'one7']);
      assert.deepEqual(named.map((s) => [s.name, s.queued]).sort(), [['big3', 41], ['one7', 2]]);
    }
    // An arena whose queues were made before the index: paged instead.
    const old = freshArena('busiest-old');
    await q.setLimits(old, { a: { rate: 1 } });
    await q.enqueue(old, 'a', ['x']);
    await fx.redis.hdel(arenaKey('weir', old, 'queues'), 'bix');
    assert.equal(await q.busiestQueues(old, 'backlog', 5), null);
    await q.close();
  });

  it('queues made in bulk (setLimits, 2,000 a call; enqueue with create, a name twice in one call) are each named once and indexed once, and scheduled only once they hold items', async () => {
    const q = new FairQueue(fx.redis);
    const arena = freshArena('bulk');
    const names = Array.from({ length: 2500 }, (_, i) => `bulk-${i}`);
    await q.setLimits(arena, Object.fromEntries(names.map((n) => [n, { rate: 2 }])));
    const key = (k: Parameters<typeof arenaKey>[2]): string => arenaKey('weir', arena, k);
    // (Beside the index's keeper, a field no queue's name: lua/includes/record.lua QIDS_KEEPER.)
    const indexed = Object.entries(await fx.redis.hgetall(key('qids'))).filter(([name]) => !name.includes('\0'));
    assert.equal(await fx.redis.hlen(key('qids')), 2501, 'every name indexed, and the keeper');
    assert.equal(indexed.length, 2500, 'every name indexed');
    assert.equal(new Set(indexed.map(([, qid]) => qid)).size, 2500, 'each under an id of its own');
    // (Below +inf: `ready`'s keeper is no queue, lua/includes/schedule.lua ZSET_KEEPER.)
    assert.equal(await fx.redis.zcount(key('ready'), '-inf', '(+inf'), 0, 'none ready: they are empty');
    assert.equal(await fx.redis.zcard(key('sched')), 0, 'none scheduled');
    assert.equal(await assertIndexed(q, arena), 2500);
    // Items for 10 of them, and 20 for one (past bucket 0), and two new queues made by enqueue, one named twice in the call.
    await Promise.all([
      ...names.slice(0, 10).map((n) => q.enqueue(arena, n, [`${n}/a`])),
      q.enqueue(arena, 'bulk-11', Array.from({ length: 20 }, (_, i) => `b11/${i}`)),
      q.enqueue(arena, 'made-here', ['m/1'], { create: { rate: 'unlimited', maxInFlight: 0 } }),
      q.enqueue(arena, 'made-here', ['m/2'], { create: { rate: 'unlimited', maxInFlight: 0 } }),
      q.enqueue(arena, 'made-too', ['t/1', 't/2'], { create: { rate: 1, maxInFlight: 1 } }),
      // (Made and past bucket 0 in one call: its bucket is its count's, not the new queue's 0.)
      q.enqueue(arena, 'made-deep', Array.from({ length: 40 }, (_, i) => `d/${i}`), { create: { rate: 1, maxInFlight: 1 } }),
    ]);
    assert.equal(await fx.redis.zcount(key('ready'), '-inf', '(+inf'), 14, 'the queues with items are ready');
    assert.equal(await assertIndexed(q, arena), 2503);
    const made = (await q.allQueueStats(arena)).find((s) => s.name === 'made-here');
    assert.equal(made?.queued, 2, 'made once, both items in it');
    assert.deepEqual((await q.busiestQueues(arena, 'backlog', 2))?.queues.map((r) => [r.name, r.queued]), [['made-deep', 40], ['bulk-11', 20]]);
    await q.close();
  });
});
