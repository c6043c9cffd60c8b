/**
 * Arenas written by older key-schema versions are taken on by this one as
 * they are used (lua/includes/keys.lua, meta.lua): version 1 kept a queue's
 * open chunk in `items`; versions 1 and 2 kept the meta fields in `meta`
 * and the leases in `leases`, which version 3 keeps in the state hash;
 * version 4 keeps a keeper member in `ready` (schedule.lua ZSET_KEEPER).
 * The older layouts are rebuilt here from an arena this version wrote, by
 * moving exactly those fields back.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import type { Lease } from '../../src/queue/index.js';
import { freshArena, sleep, useRedis } from '../helpers/fixture.js';

const fx = useRedis();

const keyOf =
  (arena: string) =>
  (name: string): string =>
    `weir:{${arena}}:${name}`;

/** The numbers packed in the state hash's field 'm', in order (lua/includes/meta.lua MPACKED). */
const PACKED = ['turn', 'gap', 'lastserve', 'queued', 'leased', 'delayed', 'done', 'dead', 'expired', 'enqueued', 'qseq', 'reapat', 'delayat', 'schedat'];

/**
 * Version 2's layout: meta fields (words; the packed numbers as text) into `meta`, leases (keys with a
 * '.') into `leases`, and each sealed head chunk ("<qid>:h") back into `items` as "<qid>:<hc>".
 */
async function backToSchema2(redis: Redis, arena: string): Promise<void> {
  const k = keyOf(arena);
  for (const f of await redis.hkeys(k('queues'))) {
    const qid = /^(\d+):h$/.exec(f)?.[1];
    if (!qid) continue;
    const head = (await redis.hgetBuffer(k('queues'), f)) as Buffer;
    const hc = ((await redis.hgetBuffer(k('queues'), qid)) as Buffer).readDoubleLE(2 * 8);
    if (head.length > 0) await redis.hset(k('items'), `${qid}:${hc}`, head);
    await redis.hdel(k('queues'), f);
  }
  const packed = await redis.hgetBuffer(k('queues'), 'm');
  if (packed) {
    for (const [i, f] of PACKED.entries()) {
      const n = packed.readDoubleLE(i * 8);
      // (Version 2 kept the pace estimate to a tenth of a µs; the rest as whole numbers.)
      if (n !== 0) await redis.hset(k('meta'), f, f === 'gap' ? n.toFixed(1) : n.toFixed(0));
    }
    await redis.hdel(k('queues'), 'm');
  }
  const fields = await redis.hkeys(k('queues'));
  for (const f of fields) {
    const isLease = f.includes('.');
    const isMeta = /^[A-Za-z]/.test(f);
    if (!isLease && !isMeta) continue;
    const v = await redis.hgetBuffer(k('queues'), f);
    await redis.hset(k(isLease ? 'leases' : 'meta'), f, v as Buffer);
    await redis.hdel(k('queues'), f);
  }
  await redis.hset(k('meta'), 'v', '2');
}

/** Version 1's layout besides: each open chunk into `items` as "<qid>:<tc>". */
async function backToSchema1(redis: Redis, arena: string, qids: string[]): Promise<void> {
  const k = keyOf(arena);
  await backToSchema2(redis, arena);
  for (const qid of qids) {
    const rec = (await redis.hgetBuffer(k('queues'), qid)) as Buffer;
    const tc = rec.readDoubleLE(4 * 8);
    const open = await redis.hgetBuffer(k('queues'), `${qid}:t`);
    assert.ok(open && open.length > 0);
    await redis.hset(k('items'), `${qid}:${tc}`, open);
    await redis.hdel(k('queues'), `${qid}:t`);
  }
  await redis.hset(k('meta'), 'v', '1');
}

describe('key-schema upgrades', () => {
  it("an arena of key-schema 1 (a queue's open chunk in `items`) is read, moved queue by queue, and marked 4: nothing lost, order kept", async () => {
    const q = fx.queue();
    const arena = freshArena();
    const k = keyOf(arena);
    await q.setLimits(arena, { a: { rate: 'unlimited' }, b: { rate: 'unlimited' } });
    // 300 items in a (two sealed chunks and an open one of 44), 3 in b (an open chunk only).
    await q.enqueue(arena, 'a', Array.from({ length: 300 }, (_, i) => `a${i}`));
    await q.enqueue(arena, 'b', ['b0', 'b1', 'b2']);
    await backToSchema1(fx.redis, arena, ['1', '2']);
    // This version's scripts take it on: appends land after the old open chunk's items (in a, enough to
    // seal it where it lies and open another), reads see them.
    await q.enqueue(arena, 'b', ['b3']);
    await q.enqueue(arena, 'a', Array.from({ length: 200 }, (_, i) => `a${300 + i}`));
    assert.deepEqual(await fx.redis.hgetall(k('meta')), { v: '4' }, 'marked: scripts of versions 1 and 2 refuse it from now on');
    assert.equal(await fx.redis.hget(k('queues'), 'v'), '4');
    const got: Record<string, string[]> = { a: [], b: [] };
    for (;;) {
      const r = await q.dequeue(arena);
      if (!r.lease) break;
      got[r.lease.queue]?.push(r.lease.item);
      await q.commit(r.lease);
    }
    assert.deepEqual(got.a, Array.from({ length: 500 }, (_, i) => `a${i}`));
    assert.deepEqual(got.b, ['b0', 'b1', 'b2', 'b3']);
    // Every moved chunk gone from `items`, no item left behind.
    assert.equal(await fx.redis.hlen(k('items')), 0);
  });

  it('an arena of key-schema 2 with leases out: counters and settings carried over, its leases commit, extend and expire as before; the old hashes go', async () => {
    const q = fx.queue();
    const arena = freshArena();
    const k = keyOf(arena);
    await q.setLimits(arena, { a: { rate: 'unlimited' }, b: { rate: 'unlimited', maxInFlight: 1 } }, { maxAttempts: 4 });
    assert.equal(await q.configureDedupe(arena, { bits: 4096, hashes: 3 }), true);
    await q.enqueue(arena, 'a', ['a0', 'a1', 'a2', 'a3'], { dedupe: [[1, 2, 3], [4, 5, 6], [7, 8, 9], [10, 11, 12]] });
    await q.enqueue(arena, 'b', ['b0', 'b1']);
    const must = async (p: Promise<{ lease: Lease | null }>): Promise<Lease> => (await p).lease as Lease;
    const [l1, l2, l3] = [await must(q.dequeue(arena)), await must(q.dequeue(arena)), await must(q.dequeue(arena, { leaseMs: 150 }))];
    const lb = await must(q.dequeue(arena));
    const before = await q.stats(arena);
    await backToSchema2(fx.redis, arena);
    assert.equal(await fx.redis.hlen(k('leases')), 4);

    // Read before any write: the same figures and settings.
    const read = await q.stats(arena);
    assert.deepEqual({ ...read, now: 0 }, { ...before, now: 0 });
    assert.deepEqual(await q.dedupeConfig(arena), { bits: 4096, hashes: 3 });
    assert.equal(await fx.redis.hget(k('meta'), 'v'), '2', 'a read writes nothing');

    // Its leases: a commit, an extend then a commit, a stale token, an expiry.
    assert.equal(await q.commit(l1), 'ok');
    assert.deepEqual(await fx.redis.hgetall(k('meta')), { v: '4' });
    assert.notEqual(await q.extend(l2, 60_000), 'stale');
    assert.equal(await fx.redis.hexists(k('leases'), l2.token.split(':')[0] as string), 0, 'an extended lease moves to the state hash');
    assert.equal(await q.commit(l2), 'ok');
    assert.equal(await q.commit(l2), 'stale');
    await sleep(200);
    const again = await must(q.dequeue(arena));
    assert.deepEqual([again.item, again.attempt], [l3.item, 2], 'the expired lease came back once, an attempt counted');
    assert.equal(await q.commit(l3), 'stale');
    assert.equal(await q.commit(lb), 'ok');
    assert.equal(await q.commit(again), 'ok');
    // Dedupe still knows what was enqueued; settings kept (maxAttempts, b's cap).
    assert.equal(await q.enqueue(arena, 'a', ['a0'], { dedupe: [[1, 2, 3]] }), 0);
    const after = await q.stats(arena);
    assert.deepEqual([after.maxAttempts, after.expired, after.leased], [4, 1, 0]);
    for (;;) {
      const r = await q.dequeue(arena);
      if (!r.lease) break;
      assert.equal(await q.commit(r.lease), 'ok');
    }
    const end = await q.stats(arena);
    assert.deepEqual([end.queued, end.leased, end.done, end.enqueued, end.drained], [0, 0, 6, 6, true]);
    assert.deepEqual((await q.allQueueStats(arena)).map((r) => [r.name, r.done, r.maxInFlight]), [
      ['a', 4, 0],
      ['b', 2, 1],
    ]);
    // The old leases hash is gone, and with it the need to look there.
    assert.equal(await fx.redis.exists(k('leases')), 0);
    assert.equal(await fx.redis.hget(k('queues'), 'oldleases'), '0');
  });

  it('an arena of key-schema 3 (`ready` without its keeper, a listpack): read as it is, marked 4 by its first write, the keeper back with the next queue made ready', async () => {
    const q = fx.queue();
    const arena = freshArena();
    const k = keyOf(arena);
    await q.setLimits(arena, { a: { rate: 'unlimited' }, b: { rate: 'unlimited' }, c: { rate: 'unlimited' } });
    await q.enqueue(arena, 'a', ['a0', 'a1']);
    await q.enqueue(arena, 'b', ['b0']);
    // Version 3's `ready`: the queues only, which Redis keeps as a listpack.
    const queues = await fx.redis.zrangebyscore(k('ready'), '-inf', '(+inf', 'WITHSCORES');
    await fx.redis.del(k('ready'));
    await fx.redis.zadd(k('ready'), ...queues.flatMap((x, i) => (i % 2 === 0 ? [queues[i + 1] as string, x] : [])));
    await fx.redis.hset(k('queues'), 'v', '3');
    assert.equal(await fx.redis.object('ENCODING', k('ready')), 'listpack');
    const before = await q.stats(arena);
    assert.deepEqual([before.queued, before.drained], [3, false]);
    assert.equal(await fx.redis.hget(k('queues'), 'v'), '3', 'a read writes nothing');
    await q.enqueue(arena, 'c', ['c0']);
    assert.equal(await fx.redis.hget(k('queues'), 'v'), '4', 'marked: scripts of version 3 refuse it from now on');
    assert.equal(await fx.redis.object('ENCODING', k('ready')), 'skiplist');
    assert.equal(await fx.redis.zcount(k('ready'), '+inf', '+inf'), 1, 'the keeper, with the queue made ready');
    const got: string[] = [];
    for (;;) {
      const r = await q.dequeue(arena);
      if (!r.lease) break;
      got.push(r.lease.item);
      assert.equal(await q.commit(r.lease), 'ok');
    }
    assert.deepEqual(got.sort(), ['a0', 'a1', 'b0', 'c0']);
    assert.equal((await q.stats(arena)).drained, true);
  });
});
