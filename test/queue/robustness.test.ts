/** Bad input, script cache loss, dropped connections and arena isolation. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { FairQueue } from '../../src/queue/index.js';
import { arenaKeys } from '../../src/queue/internal.js';
import { decodeDequeue } from '../../src/queue/replies.js';
import { ScriptRunner } from '../../src/queue/scripts.js';
import { freshArena, sleep, useRedis } from '../helpers/fixture.js';

const fx = useRedis();

/**
 * Every key and value of an arena, to prove a call wrote nothing. A hash's
 * fields sorted: a hash in a hashtable may be mid-rehash, which any read
 * advances, so its DUMP can change while its contents do not.
 */
async function snapshot(redis: Redis, arena: string): Promise<string> {
  const out: string[] = [];
  for (const k of arenaKeys('weir', arena)) {
    if ((await redis.type(k)) === 'hash') {
      const h = await redis.hgetallBuffer(k);
      out.push(`${k}=${Object.keys(h).sort().map((f) => `${f}:${(h[f] as Buffer).toString('base64')}`).join(',')}`);
      continue;
    }
    const d = await redis.dumpBuffer(k);
    out.push(`${k}=${d ? d.toString('base64') : '-'}`);
  }
  return out.join('\n');
}

describe('bad input', () => {
  it('the API rejects bad arguments with typed errors and stable codes, before sending anything', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await assert.rejects(q.setLimits('bad arena!', { a: { rate: 1 } }), { code: 'WEIR_BAD_NAME' });
    await assert.rejects(q.setLimits('x{y}', { a: { rate: 1 } }), { code: 'WEIR_BAD_NAME' });
    await assert.rejects(q.setLimits(arena, { a: { rate: 0 } }), { code: 'WEIR_BAD_RATE' });
    await assert.rejects(q.setLimits(arena, { a: { rate: -3 } }), { code: 'WEIR_BAD_RATE' });
    await assert.rejects(q.setLimits(arena, { a: { rate: Number.NaN } }), { code: 'WEIR_BAD_RATE' });
    await assert.rejects(q.setLimits(arena, { a: { rate: '5' as unknown as number } }), { code: 'WEIR_BAD_RATE' });
    await assert.rejects(q.setLimits(arena, { '': { rate: 1 } }), { code: 'WEIR_BAD_NAME' });
    await assert.rejects(q.setLimits(arena, { ['n'.repeat(257)]: { rate: 1 } }), { code: 'WEIR_BAD_NAME' });
    await assert.rejects(q.setLimits(arena, { a: { rate: 1, maxInFlight: 1.5 } }), { code: 'WEIR_BAD_ARGS' });
    await assert.rejects(q.setLimits(arena, { a: { rate: 1 } }, { maxAttempts: 0 }), { code: 'WEIR_BAD_ARGS' });
    await q.setLimits(arena, { a: { rate: 1 } });
    await assert.rejects(q.enqueue(arena, 'a', ['x'.repeat(65537)]), { code: 'WEIR_ITEM_TOO_LARGE' });
    await assert.rejects(q.enqueue(arena, 'a', [42 as unknown as string]), { code: 'WEIR_BAD_ARGS' });
    await assert.rejects(q.enqueue(arena, 'a', ['x'], { dedupe: [[1, 2], [3]] }), { code: 'WEIR_BAD_ARGS' });
    await assert.rejects(q.dequeue(arena, { leaseMs: 0 }), { code: 'WEIR_BAD_ARGS' });
    await assert.rejects(q.pause(arena, 'a', -1), { code: 'WEIR_BAD_ARGS' });
    const s = await q.stats(arena);
    assert.equal(s.queues, 1);
  });

  it('the scripts themselves reject wrong argument counts and types, and write nothing', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { a: { rate: 10 } });
    await q.enqueue(arena, 'a', ['keep']);
    const runner = new ScriptRunner(fx.redis);
    const keys = arenaKeys('weir', arena);
    const before = await snapshot(fx.redis, arena);
    const cases: [Parameters<ScriptRunner['run']>[0], (string | number)[], string][] = [
      ['setLimits', [], 'WEIR_BAD_ARGS'],
      ['setLimits', [1, '', 1, 'b', 'fast', 0], 'WEIR_BAD_RATE'],
      ['setLimits', [1, '', 1, 'b', '0', 0], 'WEIR_BAD_RATE'],
      ['setLimits', [1, '', 1, 'b', 'inf', 0], 'WEIR_BAD_RATE'],
      ['setLimits', [1, '', 2, 'b', '1', 0], 'WEIR_BAD_ARGS'],
      ['setLimits', [1, '', 2, 'b', '1', 0, 'c', 'nan', 0], 'WEIR_BAD_RATE'],
      ['setLimits', [1, 'x', 0], 'WEIR_BAD_ARGS'],
      ['enqueue', [1, 0, 1, 'a', 2, 'only-one'], 'WEIR_BAD_ARGS'],
      ['enqueue', [1, 0, 1, 'a', 1, 'x'.repeat(65537)], 'WEIR_ITEM_TOO_LARGE'],
      ['enqueue', [1, 1, 1, 'a', 1, 'x', 5], 'WEIR_NO_DEDUPE'],
      ['enqueue', [1, 0, 1, '', 1, 'x'], 'WEIR_BAD_ARGS'],
      ['enqueue', [1, 0, 1, 'a', 'many', 'x'], 'WEIR_BAD_ARGS'],
      ['enqueue', [1, 0, 1, 'a', 1001, 'x'], 'WEIR_BAD_ARGS'],
      ['enqueue', [1, 0, 2, 'a', 600, 'a', 600], 'WEIR_BAD_ARGS'],
      ['enqueue', [1, 0, 1, 'nosuchqueue', 1, 'x'], 'WEIR_UNKNOWN_QUEUE'],
      // A caller that thinks the arena has other shards than it has places nothing.
      ['enqueue', [2, 0, 1, 'a', 1, 'x'], 'WEIR_SHARDS_CHANGED'],
      ['setLimits', [3, '', 1, 'z', '1', 0], 'WEIR_SHARDS_CHANGED'],
      ['dequeue', ['short', 1000, '0'], 'WEIR_BAD_ARGS'],
      ['dequeue', ['long-enough-token', -5, '0'], 'WEIR_BAD_ARGS'],
      ['dequeue', ['long-enough-token', 1000], 'WEIR_BAD_ARGS'],
      ['dequeue', ['long-enough-token', 1000, '0', 1, '', 1000001, '', 0, 0], 'WEIR_BAD_ARGS'],
      ['commit', [], 'WEIR_BAD_ARGS'],
      ['extend', ['tok', 'soon'], 'WEIR_BAD_ARGS'],
      ['retry', ['tok', 10, 'r', 'maybe'], 'WEIR_BAD_ARGS'],
      ['retry', ['tok', 10, 'r'.repeat(1025), '1'], 'WEIR_BAD_ARGS'],
      ['pause', ['a', 1.5, ''], 'WEIR_BAD_ARGS'],
      ['pause', ['nope', 100, ''], 'WEIR_UNKNOWN_QUEUE'],
      ['pause', ['a', 100], 'WEIR_BAD_ARGS'],
      ['hold', ['2', 'a'], 'WEIR_BAD_ARGS'],
      ['dead', [0, 0], 'WEIR_BAD_ARGS'],
      ['requeueDead', [5000], 'WEIR_BAD_ARGS'],
      ['stats', [0, 10], 'WEIR_BAD_ARGS'],
      ['configureDedupe', [1000, 3], 'WEIR_BAD_ARGS'],
      ['configureDedupe', [1024, 65], 'WEIR_BAD_ARGS'],
    ];
    for (const [name, args, code] of cases) {
      await assert.rejects(runner.run(name, keys, args), { code }, `${name}(${args.join(',').slice(0, 40)})`);
    }
    await assert.rejects(runner.run('commit', keys.slice(0, 12), ['tok']), /WEIR_BAD_ARGS|14-key/);
    assert.equal(await snapshot(fx.redis, arena), before);
  });

  it('enqueue checks every bit position before it sets any: a number outside the bitmap, or one not in plain decimal, is refused and nothing is written, even past the first BITFIELD of a call', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { a: { rate: 'unlimited' } });
    await q.configureDedupe(arena, { bits: 4096, hashes: 2 });
    await q.enqueue(arena, 'a', ['keep'], { dedupe: [[1, 2]] });
    const runner = new ScriptRunner(fx.redis);
    const keys = arenaKeys('weir', arena);
    const before = await snapshot(fx.redis, arena);
    // 600 items × 2 positions: more than one BITFIELD's worth (1,000), the bad one in the second.
    const items = Array.from({ length: 600 }, (_, i) => `u${i}`);
    for (const bad of ['4096', '-1', '1.5', '0x10', '016', ' 16', '1.6e1', '1e2', '']) {
      const positions = items.flatMap((_, i) => [String((2 * i) % 4096), String((2 * i + 1) % 4096)]);
      positions[1100] = bad;
      await assert.rejects(runner.run('enqueue', keys, [1, 2, 1, 'a', items.length, ...items, ...positions]), { code: 'WEIR_BAD_ARGS' }, `position ${JSON.stringify(bad)}`);
    }
    // One BITFIELD's worth: it refuses a bad position before it sets any bit.
    for (const bad of ['4096', '-1', '0x10', '016', '1e2']) {
      await assert.rejects(runner.run('enqueue', keys, [1, 2, 1, 'a', 1, 'x', '5', bad]), { code: 'WEIR_BAD_ARGS' }, `position ${JSON.stringify(bad)} in a small call`);
    }
    assert.equal(await snapshot(fx.redis, arena), before);
  });

  it('refuses an arena written by another key-schema version', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { a: { rate: 1 } });
    // The version in the state hash (key-schema 3 on)...
    await fx.redis.hset(`weir:{${arena}}:queues`, 'v', '99');
    await assert.rejects(q.enqueue(arena, 'a', ['x']), { code: 'WEIR_SCHEMA' });
    await assert.rejects(q.dequeue(arena), { code: 'WEIR_SCHEMA' });
    // ... or in the meta hash, where versions before 3 kept it.
    const older = freshArena();
    await fx.redis.hset(`weir:{${older}}:meta`, 'v', '99');
    await assert.rejects(q.dequeue(older), { code: 'WEIR_SCHEMA' });
    await assert.rejects(q.stats(older), { code: 'WEIR_SCHEMA' });
  });
});

describe('script cache and connections', () => {
  it('recovers after its scripts are flushed (as after a Redis restart without persistence) by reloading them', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { a: { rate: 'unlimited' } });
    const flush = async (): Promise<void> => {
      await fx.redis.script('FLUSH');
      await fx.redis.call('FUNCTION', 'FLUSH');
    };
    await flush();
    assert.equal(await q.enqueue(arena, 'a', ['after-flush']), 1);
    await flush();
    const r = await q.dequeue(arena);
    assert.equal(r.lease?.item, 'after-flush');
  });

  it('a client disconnected mid-call loses nothing: every item is either queued or leased, and comes back', async () => {
    const arena = freshArena();
    const setup = fx.queue();
    await setup.setLimits(arena, { a: { rate: 'unlimited' } });
    const n = 500;
    await setup.enqueue(arena, 'a', Array.from({ length: n }, (_, i) => `i${i}`));
    // Fire dequeues and cut the connection while replies are in flight.
    for (let round = 0; round < 10; round++) {
      const c = new Redis({ port: fx.server.port, host: '127.0.0.1', maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null });
      await new Promise((r) => c.once('ready', r));
      const q = new FairQueue(c);
      const calls = Array.from({ length: 30 }, () => q.dequeue(arena, { leaseMs: 400 }).catch(() => null));
      await sleep(round % 3);
      c.disconnect();
      await Promise.all(calls);
    }
    const s = await setup.stats(arena);
    assert.equal(s.queued + s.leased, n);
    await sleep(500);
    const seen = new Set<string>();
    for (;;) {
      const r = await setup.dequeue(arena);
      if (!r.lease) break;
      seen.add(r.lease.item);
      await setup.commit(r.lease);
    }
    assert.equal(seen.size, n);
  });
});

describe('replayed calls', () => {
  it('a dequeue resent with the same token (a client retrying after a lost reply) gets the same leases back', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { a: { rate: 'unlimited' } });
    await q.enqueue(arena, 'a', ['one', 'two', 'three']);
    const runner = new ScriptRunner(fx.redis);
    const keys = arenaKeys('weir', arena);
    const first = decodeDequeue(await runner.run('dequeue', keys, ['replay-token-base', 60000, '0', 2, '', 0, '', 0, 0])).leases;
    const again = decodeDequeue(await runner.run('dequeue', keys, ['replay-token-base', 60000, '0', 2, '', 0, '', 0, 0])).leases;
    // (A token: the lease's key, a colon, its queue's id.)
    assert.deepEqual(first.map((l) => [l.token, l.item]), [['replay-token-base.1:1', 'one'], ['replay-token-base.2:1', 'two']]);
    assert.deepEqual(again.map((l) => [l.token, l.item]), [['replay-token-base.1:1', 'one'], ['replay-token-base.2:1', 'two']]);
    const s = await q.stats(arena);
    assert.deepEqual([s.queued, s.leased], [1, 2], 'nothing served twice');
    // A resent commit-and-take: its commit counted once, its lease given back, nothing served twice.
    const token = String(first[0]?.token);
    const take = (): Promise<unknown> => runner.run('dequeue', keys, ['replay-token-next', 60000, '0', 1, '', 0, '', 0, 0, token]);
    const once = decodeDequeue(await take());
    const twice = decodeDequeue(await take());
    assert.deepEqual(once.committed, ['ok']);
    assert.deepEqual(twice.committed, ['ok']);
    assert.deepEqual(twice.leases.map((l) => [l.token, l.item]), once.leases.map((l) => [l.token, l.item]));
    assert.deepEqual(once.leases.map((l) => l.item), ['three']);
    const after = await q.stats(arena);
    assert.deepEqual([after.queued, after.leased, after.done], [0, 2, 1]);
  });
});

describe('arenas', () => {
  it('share no keys: every key carries its arena hash tag, and work in one never shows in another', async () => {
    const q = fx.queue();
    const a = freshArena('iso');
    const b = freshArena('iso');
    for (const arena of [a, b]) {
      await q.setLimits(arena, { same: { rate: 'unlimited', maxInFlight: 1 } }, { maxAttempts: 2 });
      await q.configureDedupe(arena, { bits: 1024, hashes: 2 });
    }
    await q.enqueue(a, 'same', ['only-in-a'], { dedupe: [[1, 2]] });
    assert.equal(await q.enqueue(b, 'same', ['only-in-b'], { dedupe: [[1, 2]] }), 1, 'dedupe bits are per arena');
    const la = await q.dequeue(a);
    assert.equal(la.lease?.item, 'only-in-a');
    const lb = await q.dequeue(b);
    assert.equal(lb.lease?.item, 'only-in-b', 'the in-flight cap is per arena');
    await q.hold(a);
    assert.equal((await q.stats(b)).held, false);
    const keysA = new Set(arenaKeys('weir', a));
    const keysB = new Set(arenaKeys('weir', b));
    for (const k of keysA) assert.ok(!keysB.has(k));
    const stored = await fx.redis.keys(`weir:{${a}}:*`);
    assert.ok(stored.length > 0);
    for (const k of stored) assert.ok(keysA.has(k), `${k} is not in the declared key block`);
    await q.destroy(a);
    assert.equal((await fx.redis.keys(`weir:{${a}}:*`)).length, 0);
    assert.equal((await q.stats(b)).leased, 1);
  });
});
