/**
 * The Redis encodings the scripts keep: `lexp`, `ready` and `sched`
 * skiplists and the name index `qids` a hash table from their first
 * members on, by a keeper member no reader sees (lua/includes/leases.lua
 * LEXP_KEEPER, schedule.lua ZSET_KEEPER, record.lua QIDS_KEEPER). As listpacks (Redis's default for up to 128 sorted-set and
 * 512 hash members) every insert or lookup reads them from the start.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Lease } from '../../src/queue/index.js';
import { arenaKeys } from '../../src/queue/keys.js';
import { ScriptRunner } from '../../src/queue/scripts.js';
import { freshArena, sleep, useRedis } from '../helpers/fixture.js';

const fx = useRedis();

async function must(p: Promise<{ lease: Lease | null }>): Promise<Lease> {
  const r = await p;
  assert.ok(r.lease, 'expected a lease');
  return r.lease;
}

describe('encodings the scripts keep', () => {
  it('lease expiries are a skiplist, whatever their number: a keeper at +inf that no reader sees', async () => {
    const q = fx.queue();
    const arena = freshArena();
    const lexp = `weir:{${arena}}:lexp`;
    const expiries = (): Promise<number> => fx.redis.zcount(lexp, '-inf', '(+inf');
    await q.setLimits(arena, { a: { rate: 'unlimited' } });
    await q.enqueue(arena, 'a', ['1', '2', '3']);
    // (Two members would be a listpack by Redis's defaults: 128 entries of up to 64 bytes.)
    const long = await must(q.dequeue(arena, { leaseMs: 60_000 }));
    await must(q.dequeue(arena, { leaseMs: 80 }));
    assert.equal(await fx.redis.object('ENCODING', lexp), 'skiplist');
    assert.equal(await expiries(), 2);
    // The short lease expires and is reaped by the next call (its item served again); the keeper is not.
    await sleep(150);
    const again = await must(q.dequeue(arena, { leaseMs: 60_000 }));
    assert.deepEqual([again.item, again.attempt], ['2', 2]);
    for (const l of [long, again]) assert.equal(await q.commit(l), 'ok');
    assert.equal(await expiries(), 0);
    assert.equal(await fx.redis.zcard(lexp), 1, 'the keeper stays: the set never empties back into a listpack');
    assert.deepEqual(await fx.redis.zrangebyscore(lexp, '(0', '+inf', 'WITHSCORES').then((r) => r[1]), 'inf');
    // With only the keeper left, nothing is looked for: the last item served, the arena drained, no wait.
    assert.equal(await q.commit(await must(q.dequeue(arena, { leaseMs: 60_000 }))), 'ok');
    assert.equal((await q.stats(arena)).drained, true);
    assert.equal((await q.dequeue(arena)).waitMs, null);
  });

  it('the ready and the scheduled queues are skiplists from the first on: a keeper at +inf that no reader sees, a queue promoted beside it placed at a finite turn', async () => {
    const q = fx.queue();
    const arena = freshArena();
    const ready = `weir:{${arena}}:ready`;
    const sched = `weir:{${arena}}:sched`;
    const realReady = (): Promise<number> => fx.redis.zcount(ready, '-inf', '(+inf');
    await q.setLimits(arena, { a: { rate: 1 }, b: { rate: 1 }, u: { rate: 'unlimited' } });
    await q.enqueue(arena, 'a', ['a1', 'a2']);
    await q.enqueue(arena, 'b', ['b1', 'b2']);
    assert.equal(await fx.redis.object('ENCODING', ready), 'skiplist');
    assert.equal(await realReady(), 2);
    // The listing of queues waiting for a worker shows the queues only.
    assert.deepEqual((await q.busiestQueues(arena, 'waiting', 10))?.queues.map((x) => x.name).sort(), ['a', 'b']);
    const first = [await must(q.dequeue(arena, { leaseMs: 60_000 })), await must(q.dequeue(arena, { leaseMs: 60_000 }))];
    assert.deepEqual(first.map((l) => l.item).sort(), ['a1', 'b1']);
    for (const l of first) assert.equal(await q.commit(l), 'ok');
    // Both wait for their next slot in `sched`, beside its keeper; only the
    // keeper is ready, and a dequeue that pops it puts it back. The wait it
    // is told comes from `sched`'s slots, the keeper passed over.
    assert.equal(await realReady(), 0);
    assert.equal(await fx.redis.object('ENCODING', sched), 'skiplist');
    assert.equal(await fx.redis.zcount(sched, '-inf', '(+inf'), 2);
    const none = await q.dequeue(arena, { leaseMs: 60_000 });
    assert.equal(none.lease, null);
    assert.ok(none.waitMs !== null && none.waitMs > 0 && none.waitMs <= 1000, `told to come back at the next slot (${none.waitMs} ms)`);
    // Two more callers: the other slot is promised to one, and the last, with
    // every slot promised, looks past them to the keeper and passes over it.
    for (const other of [fx.queue(), fx.queue()]) {
      const r = await other.dequeue(arena, { leaseMs: 60_000 });
      assert.ok(r.lease === null && r.waitMs !== null && r.waitMs > 0, `another caller told to wait (${r.waitMs} ms)`);
    }
    assert.equal(await fx.redis.zcard(ready), 1, 'the keeper stays: the set never empties back into a listpack');
    // Both slots come at once: the call that promotes them serves one, and the
    // other waits in `ready` at a turn (not at the keeper's +inf, which its
    // place after the head would have been, were the keeper taken for one).
    await sleep(1100);
    const second = await must(q.dequeue(arena, { leaseMs: 60_000 }));
    const scores = await fx.redis.zrange(ready, 0, -1, 'WITHSCORES');
    assert.equal(scores.length, 4, `one queue and the keeper: ${scores.join(' ')}`);
    assert.ok(Number.isFinite(Number(scores[1])), `the waiting queue's turn ${scores[1]}`);
    assert.equal(scores[3], 'inf');
    const third = await must(q.dequeue(arena, { leaseMs: 60_000 }));
    assert.deepEqual([second.item, third.item].sort(), ['a2', 'b2']);
    // A call asking for more than is ready pops the keeper once the queues run out, and puts it back.
    await q.enqueue(arena, 'u', ['u1', 'u2', 'u3']);
    const batch = (await q.dequeueMany(arena, 4, { leaseMs: 60_000 })).map((r) => r.lease).filter((l) => l !== null);
    assert.deepEqual(batch.map((l) => l.item), ['u1', 'u2', 'u3']);
    for (const l of [second, third, ...batch]) assert.equal(await q.commit(l), 'ok');
    assert.equal((await q.stats(arena)).drained, true);
    assert.equal((await q.dequeue(arena)).waitMs, null, 'drained: nothing to wait for');
    assert.deepEqual([await fx.redis.zcard(ready), await fx.redis.zcard(sched)], [1, 1], 'each keeps its keeper');
  });

  it('the name index is a hash table from its first queue on, made by setLimits or by an enqueue; its keeper is no queue', async () => {
    const q = fx.queue();
    const arena = freshArena();
    const qids = `weir:{${arena}}:qids`;
    await q.setLimits(arena, { a: { rate: 'unlimited' }, b: { rate: 2 } });
    assert.equal(await fx.redis.object('ENCODING', qids), 'hashtable');
    const made = freshArena();
    await q.enqueueAll(made, [{ queue: 'x.test', items: ['u'], options: { create: { rate: 1, maxInFlight: 1 } } }]);
    assert.equal(await fx.redis.object('ENCODING', `weir:{${made}}:qids`), 'hashtable');
    // The keeper is a field of its own, under a name no queue can have.
    const fields = await fx.redis.hkeys(qids);
    const keeper = fields.find((f) => f.includes('\0')) as string;
    assert.ok(keeper, 'a field holding a NUL byte');
    assert.deepEqual(fields.filter((f) => f !== keeper).sort(), ['a', 'b']);
    // ...refused by name everywhere: an enqueue (with or without limits to create it), the admin calls.
    await assert.rejects(q.enqueue(arena, keeper, ['v']), { code: 'WEIR_BAD_NAME', message: /NUL/ });
    await assert.rejects(q.enqueueAll(arena, [{ queue: keeper, items: ['v'], options: { create: { rate: 1, maxInFlight: 1 } } }]), { code: 'WEIR_BAD_NAME', message: /NUL/ });
    await assert.rejects(q.namedQueueStats(arena, [keeper]), { code: 'WEIR_BAD_NAME' });
    await assert.rejects(q.pause(arena, keeper, 1000), { code: 'WEIR_BAD_NAME' });
    // (The script refuses it too, for a caller that is not this client: shards k g (queue n) item ['creates' rate cap].)
    const runner = new ScriptRunner(fx.redis);
    for (const create of [[], ['creates', '1', '1']]) {
      await assert.rejects(runner.run('enqueue', arenaKeys('weir', arena), [1, 0, 1, keeper, 1, 'v', ...create]), { code: 'WEIR_BAD_ARGS', message: /NUL/ });
    }
    // ...and counted nowhere: the arena has its two queues, their items and nothing else.
    await q.enqueue(arena, 'a', ['1']);
    const s = await q.stats(arena);
    assert.deepEqual([s.queued, s.leased], [1, 0]);
    assert.deepEqual((await q.queueStats(arena)).queues.map((x) => x.name).sort(), ['a', 'b']);
  });
});
