/**
 * Every script, unchanged, on a local 3-master Redis Cluster. The cluster is
 * started here; if it cannot start, this test fails (it is never skipped).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { FairQueue, type Lease } from '../../src/queue/index.js';
import { SCRIPT_NAMES, arenaKeys } from '../../src/queue/internal.js';
import { clusterSlot } from '../../src/queue/script-call.js';
import { ScriptRunner } from '../../src/queue/scripts.js';
import { startCluster, type RedisClusterHandle } from '../helpers/redis.js';
import { sleep } from '../helpers/fixture.js';
import { noopRunner } from '../helpers/noop.js';

let cluster: RedisClusterHandle;
const queues: FairQueue[] = [];

before(async () => {
  cluster = await startCluster();
});
after(async () => {
  for (const q of queues) await q.close();
  await cluster.destroy();
});

describe('Redis Cluster', () => {
  it('runs every queue operation on arenas spread over the three masters', async () => {
    const client = cluster.client();
    const q = new FairQueue(client);
    queues.push(q);
    // Record which scripts really ran, as the client sent them.
    const used = new Set<string>();
    // eslint-disable-next-line @typescript-eslint/unbound-method -- re-bound with .call below
    const original = ScriptRunner.prototype.run;
    ScriptRunner.prototype.run = function (this: ScriptRunner, name: string, keys, args) {
      used.add(name);
      return original.call(this, name, keys, args);
    };
    after(() => {
      ScriptRunner.prototype.run = original;
    });
    const slots = new Set<number>();
    // Arenas chosen to land on different masters.
    const arenas = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot'];
    for (const arena of arenas) {
      slots.add(Number(await client.cluster('KEYSLOT', `weir:{${arena}}:meta`)));
      await q.setLimits(arena, { s1: { rate: 200, maxInFlight: 2 }, s2: { rate: 'unlimited' } }, { maxAttempts: 2 });
      await q.configureDedupe(arena, { bits: 4096, hashes: 3 });
      assert.equal(await q.enqueue(arena, 's1', ['a', 'b', 'a'], { dedupe: [[1, 2, 3], [4, 5, 6], [1, 2, 3]] }), 2);
      assert.equal(await q.enqueue(arena, 's2', ['c', 'd', 'e']), 3);
      const l1 = await q.take(arena);
      const l2 = await q.take(arena);
      const l3 = await q.take(arena);
      const l4 = await q.take(arena);
      assert.ok(l1 && l2 && l3 && l4);
      assert.equal(await q.extend(l1, 5000), 'ok');
      assert.equal(await q.commit(l1), 'ok');
      assert.equal(await q.release(l2), 'ok');
      assert.equal(await q.retry(l3, { delayMs: 20, reason: 'later' }), 'ok');
      assert.equal(await q.fail(l4, 'bad'), 'ok');
      assert.ok((await q.pause(arena, 's1', 10)) > 0);
      await q.hold(arena, 's2');
      await q.unhold(arena, 's2');
      await q.hold(arena);
      await q.unhold(arena);
      assert.equal((await q.dead(arena)).length, 1);
      assert.equal(await q.requeueDead(arena, 5), 1);
      assert.equal(await noopRunner(client).run('noop', arenaKeys('weir', arena), [1, 2]), 2);
      assert.ok((await q.repause(arena, 's1', await q.pause(arena, 's1', 1000), 0)).end > 0);
      // A queue made by its first items; its pace learned from a report; its items purged.
      assert.equal(await q.enqueue(arena, 's3', ['f', 'g'], { create: { rate: 100, maxInFlight: 1 } }), 2);
      assert.equal(await q.reportPace(arena, 's3', { ms: 30, healthy: true, delayFactor: 2, maxDelayMs: 1000 }), 60);
      assert.equal(await q.purge(arena, 's3'), 2);
      // A revisit: done now, back in 20 ms at its queue's tail (the drain below takes it).
      await q.enqueue(arena, 's3', ['r']);
      let r = await q.dequeue(arena);
      while (r.lease?.item !== 'r') {
        if (r.lease) await q.commit(r.lease);
        r = await q.dequeue(arena);
      }
      assert.equal(await q.revisit(r.lease, { delayMs: 20 }), 'ok');
      // Drain what is left, delayed retry and revisit included; s1's sends reported (a send window).
      await sleep(30);
      const ac = new AbortController();
      for (;;) {
        const s = await q.stats(arena);
        if (s.drained) break;
        const l = await q.take(arena, { signal: ac.signal, sendWindowMs: 5000 });
        assert.ok(l);
        if (l.intervalMs > 0) assert.equal(await q.sent(l, true), 'ok');
        await q.commit(l);
      }
      const page = await q.queueStats(arena);
      assert.equal(page.queues.length, 3);
      assert.equal((await q.stats(arena)).done, 7, 'five items, and the revisited one twice');
      await q.destroy(arena);
    }
    assert.ok(slots.size >= 3);
    const masters = new Set<string>();
    for (const s of slots) {
      const nodes = (await client.cluster('SLOTS')) as unknown as [number, number, [string, number]][];
      const owner = nodes.find(([lo, hi]) => s >= lo && s <= hi);
      if (owner) masters.add(String(owner[2][1]));
    }
    assert.equal(masters.size, 3, 'the arenas landed on all three masters');
    assert.deepEqual([...used].sort(), [...SCRIPT_NAMES, 'noop'].sort());
  });

  it('wakes a blocked worker on a cluster too', async () => {
    const q = new FairQueue(cluster.client());
    const producer = new FairQueue(cluster.client());
    queues.push(q, producer);
    await q.setLimits('wakeup', { a: { rate: 'unlimited' } });
    const taking = q.take('wakeup');
    await sleep(200);
    const t = Date.now();
    await producer.enqueue('wakeup', 'a', ['hello']);
    const l = await taking;
    assert.equal(l?.item, 'hello');
    assert.ok(Date.now() - t < 3000);
  });

  it('sends send reports without a reply to the master of each shard, and the next slots keep to them', async () => {
    const client = cluster.client();
    const q = new FairQueue(client);
    queues.push(q);
    // The slot weir computes is the one Redis does, hash tags and all.
    for (const key of ['weir:{alpha}:meta', 'plain', '{}x', 'a{b}c{d}', '{a}', 'weir:{ünïcödé~3}:q', '{{x}}', 'x{']) {
      assert.equal(clusterSlot(key), Number(await client.cluster('KEYSLOT', key)), key);
    }
    const replyCalls = async (): Promise<number> => {
      let n = 0;
      for (const node of client.nodes('master')) n += Number(/^cmdstat_client\|reply:calls=(\d+)/m.exec(await node.info('commandstats'))?.[1] ?? 0);
      return n;
    };
    const redisNow = async (): Promise<number> => {
      const [s, us] = await client.time();
      return Number(s) * 1000 + Number(us) / 1000;
    };
    const arenas = ['ow-alpha', 'ow-bravo', 'ow-charlie', 'ow-delta', 'ow-echo', 'ow-foxtrot'];
    const masters = new Set<string>();
    const take = async (arena: string): Promise<Lease> => {
      for (let i = 0; i < 1000; i++) {
        const r = await q.dequeue(arena, { sendWindowMs: 10_000, aheadMs: 1000 });
        if (r.lease) return r.lease;
        await sleep(5);
      }
      throw new Error('no lease in 1,000 calls');
    };
    const leases = new Map<string, Lease>();
    for (const arena of arenas) {
      const slot = clusterSlot(`weir:{${arena}}:meta`);
      const owner = ((await client.cluster('SLOTS')) as unknown as [number, number, [string, number]][]).find(([lo, hi]) => slot >= lo && slot <= hi);
      masters.add(String(owner?.[2][1]));
      await q.setLimits(arena, { a: { rate: 10 } });
      await q.enqueue(arena, 'a', ['1', '2', '3']);
      const first = await take(arena);
      // The first report to each master opens a link to it and goes the ordinary way.
      q.reportSent(first, true, 3);
      leases.set(arena, await take(arena));
    }
    assert.equal(masters.size, 3, 'the arenas are on all three masters');
    await sleep(100);
    let ordinary = 0;
    // eslint-disable-next-line @typescript-eslint/unbound-method -- re-bound with .call below
    const original = ScriptRunner.prototype.run;
    ScriptRunner.prototype.run = function (this: ScriptRunner, name: string, keys, args) {
      if (name === 'sent') ordinary++;
      return original.call(this, name, keys, args);
    };
    after(() => {
      ScriptRunner.prototype.run = original;
    });
    for (const arena of arenas) {
      const sentAt = await redisNow();
      q.reportSent(leases.get(arena) as Lease, true, 3);
      const next = await take(arena);
      assert.ok(next.servedAt >= sentAt + 100 + 3, `${arena}: the next slot ${(next.servedAt - sentAt).toFixed(3)} ms after the report`);
      assert.ok(next.servedAt - sentAt < 5000, `${arena}: the report arrived (the window is 10 s)`);
    }
    ScriptRunner.prototype.run = original;
    assert.equal(ordinary, 0, 'every report went on a link, none the ordinary way');
    assert.equal(await replyCalls(), 3, 'one link to each master, each said CLIENT REPLY OFF');
  });
});
