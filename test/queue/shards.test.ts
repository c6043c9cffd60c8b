/**
 * An arena split into shards on one Redis (the same scripts and keys a
 * Cluster gets, test/cluster/ runs them there): the mapping of queues to
 * shards, the fixed shard count, and every arena-wide operation across
 * shards.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FairQueue, type Lease } from '../../src/queue/index.js';
import { shardOf } from '../../src/queue/shards.js';
import { freshArena, jain, sleep, useRedis } from '../helpers/fixture.js';

const fx = useRedis();

/** Drains an arena with one client's `lanes` concurrent take/commit loops; returns each queue's leases in order. */
async function drain(q: FairQueue, arena: string, lanes: number, total: number): Promise<Lease[]> {
  const got: Lease[] = [];
  const ac = new AbortController();
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      let lease = await q.take(arena, { signal: ac.signal });
      while (lease) {
        got.push(lease);
        if (got.length >= total) ac.abort();
        const step = q.commitAndTake(lease, { signal: ac.signal });
        assert.equal(await step.committed, 'ok');
        lease = await step.next;
      }
    }),
  );
  return got;
}

/** An arena of 4 shards holding 1, 2, 3 and 6 of its 12 unlimited domains (`<prefix><i>.test`), `items` queued in each. */
async function unevenArena(prefix: string, items: number): Promise<{ q: FairQueue; arena: string; names: string[] }> {
  const q = fx.queue();
  const arena = freshArena();
  await q.fixShards(arena, 4);
  const want = [1, 2, 3, 6];
  const names: string[] = [];
  for (let i = 0; names.length < 12; i++) {
    const n = `${prefix}${i}.test`;
    const s = shardOf(n, 4);
    if (names.filter((m) => shardOf(m, 4) === s).length < (want[s] ?? 0)) names.push(n);
  }
  await q.setLimits(arena, Object.fromEntries(names.map((n) => [n, { rate: 'unlimited' as const }])));
  for (const n of names) await q.enqueue(arena, n, Array.from({ length: items }, (_, i) => `${n}/${i}`));
  return { q, arena, names };
}

describe('shards', () => {
  it('maps a queue to its shard by a fixed hash: the same in every process and version', () => {
    // Never to change: stored arenas depend on it.
    const table: [string, number, number][] = [
      ['example.com', 3, 11],
      ['python.org', 2, 10],
      ['docs.python.org', 3, 3],
      ['a.test', 2, 6],
      ['b.test', 3, 11],
      ['site-0.test', 0, 8],
      ['site-1.test', 2, 10],
      ['xn--bcher-kva.example', 1, 9],
      ['127.0.0.1:8080', 1, 1],
      ['www.wikipedia.org', 0, 4],
    ];
    for (const [name, of4, of12] of table) {
      assert.equal(shardOf(name, 4), of4, name);
      assert.equal(shardOf(name, 12), of12, name);
      assert.equal(shardOf(name, 1), 0);
    }
  });

  it('spreads 1,000 domains over 12 shards evenly (each within ±30% of the mean)', () => {
    for (const make of [(i: number) => `site-${i}.example`, (i: number) => `www.domain${i}.com`]) {
      const counts = new Array<number>(12).fill(0);
      for (let i = 0; i < 1000; i++) counts[shardOf(make(i), 12)]! += 1;
      for (const c of counts) assert.ok(c >= 0.7 * (1000 / 12) && c <= 1.3 * (1000 / 12), counts.join(' '));
    }
  });

  it('a take waiting on 12 shards at once adds no listener past Node\'s warning threshold (a warning per wait seen before)', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.fixShards(arena, 12);
    await q.setLimits(arena, { 'a.test': { rate: 'unlimited' } });
    const warnings: string[] = [];
    const onWarning = (w: Error): void => void warnings.push(`${w.name}: ${w.message}`);
    process.on('warning', onWarning);
    try {
      // Nothing queued: each take blocks on all 12 shards' wake lists until aborted.
      for (let i = 0; i < 3; i++) assert.equal(await q.take(arena, { signal: AbortSignal.timeout(150) }), null);
      await new Promise((r) => setImmediate(r));
    } finally {
      process.off('warning', onWarning);
    }
    assert.deepEqual(warnings.filter((w) => w.includes('MaxListeners')), []);
  });

  it('fixes the shard count once: a different one is a clear error', async () => {
    const q = fx.queue();
    const arena = freshArena();
    assert.equal((await q.layout(arena)).shards, 1);
    const fixed = await q.fixShards(arena, 4);
    assert.equal(fixed.shards, 4);
    assert.deepEqual(fixed.tags, [arena, `${arena}~1`, `${arena}~2`, `${arena}~3`]);
    assert.equal((await q.fixShards(arena)).shards, 4);
    assert.equal((await q.fixShards(arena, 4)).shards, 4);
    await assert.rejects(q.fixShards(arena, 8), (e: Error & { code?: string }) => e.code === 'WEIR_SHARDS_MISMATCH' && /has 4 shards.*not 8/.test(e.message));
    // Another process sees the stored layout.
    assert.equal((await new FairQueue(fx.redis).layout(arena)).shards, 4);
    // An arena that holds data from before layouts has one shard.
    const old = freshArena();
    await q.setLimits(old, { a: { rate: 1 } });
    await assert.rejects(q.fixShards(old, 2), (e: Error & { code?: string }) => e.code === 'WEIR_SHARDS_MISMATCH');
    assert.equal((await q.fixShards(old)).shards, 1);
    // A damaged layout is an error, never a guess.
    const bad = freshArena();
    await fx.redis.set(`weir:{${bad}}:layout`, '{"v":1,"shards":2,"tags":["x","y"]}');
    await assert.rejects(new FairQueue(fx.redis).layout(bad), (e: Error & { code?: string }) => e.code === 'WEIR_SCHEMA');
  });

  it('serves every item once across shards, dedupes across them, and sums arena-wide figures', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.fixShards(arena, 4);
    const names = Array.from({ length: 40 }, (_, i) => `d${i}.test`);
    assert.equal(await q.setLimits(arena, Object.fromEntries(names.map((n) => [n, { rate: 'unlimited' as const }])), { maxAttempts: 3 }), 40);
    assert.ok(new Set(names.map((n) => shardOf(n, 4))).size === 4);
    await q.configureDedupe(arena, { bits: 1 << 16, hashes: 4 });
    const pos = (i: number): number[] => [i * 7, i * 7 + 1, i * 7 + 2, (i * 7 + 3) % (1 << 16)];
    let added = 0;
    for (const [j, n] of names.entries()) added += await q.enqueue(arena, n, [`${n}/a`, `${n}/b`], { dedupe: [pos(2 * j), pos(2 * j + 1)] });
    assert.equal(added, 80);
    // The same URLs again: all dropped, whatever their shard.
    for (const [j, n] of names.entries()) assert.equal(await q.enqueue(arena, n, [`${n}/a`], { dedupe: [pos(2 * j)] }), 0);
    const stats = await q.stats(arena);
    assert.equal(stats.queued, 80);
    assert.equal(stats.queues, 40);
    assert.equal(stats.maxAttempts, 3);
    assert.equal(stats.dedupe?.bits, 4 * (1 << 14));
    assert.equal(await q.dedupeBitsSet(arena), 80 * 4);
    const all = await q.allQueueStats(arena);
    assert.deepEqual(all.map((s) => s.name).sort(), [...names].sort());
    let pages = 0;
    for (let c: number | null = 1; c !== null; pages++) c = (await q.queueStats(arena, { cursor: c, count: 7 })).cursor;
    assert.ok(pages >= 7);
    const got = await drain(q, arena, 4, 80);
    assert.equal(new Set(got.map((l) => l.item)).size, 80);
    assert.ok(new Set(got.map((l) => l.shard)).size === 4);
    const after = await q.stats(arena);
    assert.equal(after.done, 80);
    assert.ok(after.drained);
  });

  it('holds, dead-letters, requeues and clears across shards', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.fixShards(arena, 3);
    const names = ['a.test', 'b.test', 'c.test', 'd.test', 'e.test', 'f.test'];
    await q.setLimits(arena, Object.fromEntries(names.map((n) => [n, { rate: 'unlimited' as const }])));
    for (const n of names) await q.enqueue(arena, n, [`${n}/1`]);
    await q.hold(arena);
    assert.ok((await q.stats(arena)).held);
    assert.equal((await q.dequeue(arena)).lease, null);
    await q.unhold(arena);
    await q.hold(arena, 'a.test');
    const leases: Lease[] = [];
    for (let r = await q.dequeue(arena); r.lease; r = await q.dequeue(arena)) leases.push(r.lease);
    assert.equal(leases.length, 5);
    assert.ok(!leases.some((l) => l.queue === 'a.test'));
    for (const l of leases) assert.equal(await q.fail(l, `broken ${l.queue}`), 'ok');
    const dead = await q.dead(arena, { count: 100 });
    assert.deepEqual(dead.map((d) => d.queue).sort(), names.slice(1));
    assert.deepEqual((await q.dead(arena, { offset: 2, count: 2 })).map((d) => d.item), dead.slice(2, 4).map((d) => d.item));
    assert.equal(await q.requeueDead(arena, 10), 5);
    assert.equal((await q.stats(arena)).queued, 6);
    assert.ok((await q.clear(arena)) > 0);
    assert.deepEqual(await fx.redis.keys(`weir:{${arena}*`), []);
    assert.equal((await q.layout(arena)).shards, 1);
  });

  it('gives domains on different shards equal service (Jain ≥ 0.95), however unevenly the shards are filled', async () => {
    const { q, arena, names } = await unevenArena('fair', 200);
    const got = await drain(q, arena, 6, 600);
    const per = names.map((n) => got.filter((l) => l.queue === n).length);
    assert.ok(jain(per) >= 0.95, `Jain ${jain(per).toFixed(3)}: ${per.join(' ')}`);
  });

  it('plain dequeue calls take turns across shards too (each call from the shard whose turn it is, not the first)', async () => {
    const { q, arena, names } = await unevenArena('turn', 100);
    const got: Lease[] = [];
    for (let i = 0; i < 240; i++) {
      const { lease } = await q.dequeue(arena);
      assert.ok(lease);
      got.push(lease);
      await q.commit(lease);
    }
    const per = names.map((n) => got.filter((l) => l.queue === n).length);
    assert.ok(jain(per) >= 0.95, `Jain ${jain(per).toFixed(3)}: ${per.join(' ')}`);
  });

  it('waits on every shard without polling, and wakes for work on any of them', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.fixShards(arena, 4);
    const names = ['w0.test', 'w1.test', 'w2.test', 'w3.test', 'w4.test', 'w5.test', 'w6.test', 'w7.test'];
    await q.setLimits(arena, Object.fromEntries(names.map((n) => [n, { rate: 'unlimited' as const }])));
    const before = q.counters.dequeues;
    const waiting = q.take(arena);
    await sleep(1500);
    // One look at each shard, then blocking on their wake lists.
    assert.ok(q.counters.dequeues - before <= 4 + 1, `${q.counters.dequeues - before} dequeues while idle`);
    const target = names.find((n) => shardOf(n, 4) === 3) as string;
    const producer = new FairQueue(fx.redis);
    await producer.enqueue(arena, target, ['late']);
    const lease = await Promise.race([waiting, sleep(3000).then(() => null)]);
    assert.equal(lease?.item, 'late');
    assert.ok(q.counters.wakeups >= 1);
    await producer.close();
  });

  it('a slot coming on one shard does not send a worker asking every idle shard again (no empty-call storm)', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.fixShards(arena, 4);
    // One domain at 40/s on one shard; the other three shards have queues but nothing in them.
    const names = ['p0.test', 'p1.test', 'p2.test', 'p3.test', 'p4.test', 'p5.test', 'p6.test', 'p7.test'];
    const busy = names[0] as string;
    await q.setLimits(arena, Object.fromEntries(names.map((n) => [n, { rate: n === busy ? 40 : ('unlimited' as const) }])));
    assert.ok(new Set(names.map((n) => shardOf(n, 4))).size === 4);
    await q.enqueue(arena, busy, Array.from({ length: 40 }, (_, i) => `${busy}/${i}`));
    const got = await drain(q, arena, 2, 30);
    assert.equal(got.length, 30);
    // Each serve is a short timed wait for the busy shard's next slot; the
    // idle shards said "only new work helps" and are not asked again for it.
    assert.ok(q.counters.emptyDequeues <= 30, `${q.counters.emptyDequeues} empty dequeue calls for 30 leases`);
  });

  it('re-reads a layout stored after it looked: nothing lands in the wrong shard', async () => {
    const early = fx.queue();
    const arena = freshArena();
    assert.equal((await early.layout(arena)).shards, 1);
    const kicker = fx.queue();
    await kicker.fixShards(arena, 4);
    await kicker.setLimits(arena, { 'x.test': { rate: 'unlimited' }, 'y.test': { rate: 'unlimited' }, 'z.test': { rate: 'unlimited' } });
    // `early` still believes in one shard: the scripts refuse it and it re-reads.
    for (const n of ['x.test', 'y.test', 'z.test']) assert.equal(await early.enqueue(arena, n, [`${n}/1`]), 1);
    assert.equal((await early.layout(arena)).shards, 4);
    // Each item is served from its queue's own shard.
    for (let r = await kicker.dequeue(arena); r.lease; r = await kicker.dequeue(arena)) {
      assert.equal(r.lease.shard, (await kicker.layout(arena)).tags[shardOf(r.lease.queue, 4)]);
      await kicker.commit(r.lease);
    }
    assert.equal((await kicker.stats(arena)).done, 3);
  });
});
