/**
 * The send window (lua/sent.lua, serve.lua "Send window"): a rate-limited
 * queue's next slot waits for the report of the request before it and is
 * counted from that report on Redis's clock; and a replayed dequeue gives a
 * slot served ahead as that slot, never as an earlier time.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type FairQueue, type Lease } from '../../src/queue/index.js';
import { arenaKeys } from '../../src/queue/internal.js';
import { decodeDequeue } from '../../src/queue/replies.js';
import { ScriptRunner } from '../../src/queue/scripts.js';
import { freshArena, sleep, useRedis } from '../helpers/fixture.js';

const fx = useRedis();

/** Redis's clock, ms. */
async function redisNow(): Promise<number> {
  const [s, us] = await fx.redis.time();
  return Number(s) * 1000 + Number(us) / 1000;
}

/** The next lease, asked for at once and served up to a second ahead, so that servedAt is its slot exactly. */
async function take(q: FairQueue, arena: string, windowMs: number): Promise<Lease> {
  for (let i = 0; i < 1000; i++) {
    const r = await q.dequeue(arena, { sendWindowMs: windowMs, aheadMs: 1000 });
    if (r.lease) return r.lease;
    await sleep(5);
  }
  throw new Error('no lease in 1,000 calls');
}

/** A fresh arena with queue `a` at `rate` holding `items`, and its first lease taken with a send window of `windowMs`. */
async function firstLease(rate: number, items: string[], windowMs: number): Promise<{ q: FairQueue; arena: string; first: Lease }> {
  const q = fx.queue();
  const arena = freshArena('sw');
  await q.setLimits(arena, { a: { rate } });
  await q.enqueue(arena, 'a', items);
  const first = (await q.dequeue(arena, { sendWindowMs: windowMs })).lease;
  assert.ok(first);
  return { q, arena, first };
}

describe('send window', () => {
  it("holds a rate-limited queue's next slot until the send is reported, then counts it from the report", async () => {
    const { q, arena, first } = await firstLease(10, ['one', 'two', 'three'], 10_000);
    // Long past the rate's own 100 ms: still held, the send unreported.
    await sleep(300);
    const held = await q.dequeue(arena, { sendWindowMs: 10_000 });
    assert.equal(held.lease, null, 'no slot while the send before it is unreported');
    assert.ok(held.waitMs !== null && held.waitMs > 5000, `held to the window's end, wait ${held.waitMs} ms`);
    const before = await redisNow();
    assert.equal(await q.sent(first, true, 3), 'ok');
    assert.equal(await q.sent(first, true, 3), 'stale', 'one report per serve');
    const second = await take(q, arena, 10_000);
    assert.ok(second.servedAt >= before + 100 + 3, `served ${(second.servedAt - before).toFixed(3)} ms after the report was sent: at least the interval plus the margin`);
    assert.ok(second.servedAt - before < 2000, 'and soon after');
  });

  it('a queue is in one of `ready` and `sched` at a time: moved within `sched` by a report, and out of `ready` when a pause puts it in `sched`', async () => {
    const { q, arena, first } = await firstLease(10, ['one', 'two', 'three'], 10_000);
    const ready = `weir:{${arena}}:ready`;
    const sched = `weir:{${arena}}:sched`;
    const qid = String(await fx.redis.hget(`weir:{${arena}}:qids`, 'a'));
    const where = async (): Promise<[string | null, string | null]> => [await fx.redis.zscore(ready, qid), await fx.redis.zscore(sched, qid)];
    // Held by the send window: in `sched` at the window's end.
    const [r0, held] = await where();
    assert.equal(r0, null);
    assert.ok(held !== null);
    assert.equal(await q.sent(first, true, 3), 'ok');
    const [r1, next] = await where();
    assert.equal(r1, null, 'not in ready after the report');
    assert.ok(next !== null && Number(next) < Number(held), 'its slot in sched moved earlier, to the report plus the interval');
    // A queue due now is in `ready` only; paused, it moves to `sched` only.
    await q.setLimits(arena, { b: { rate: 10 } });
    await q.enqueue(arena, 'b', ['x']);
    const bid = String(await fx.redis.hget(`weir:{${arena}}:qids`, 'b'));
    assert.ok((await fx.redis.zscore(ready, bid)) !== null);
    assert.equal(await fx.redis.zscore(sched, bid), null);
    await q.pause(arena, 'b', 5000);
    assert.equal(await fx.redis.zscore(ready, bid), null, 'a paused queue leaves ready');
    assert.ok((await fx.redis.zscore(sched, bid)) !== null, 'and waits in sched for the pause to end');
  });

  it('a request reported never sent frees the next slot at the time its rate alone gives', async () => {
    const { q, arena, first } = await firstLease(2, ['one', 'two'], 10_000);
    assert.equal(await q.sent(first, false), 'ok');
    const second = await take(q, arena, 10_000);
    assert.ok(Math.abs(second.servedAt - (first.servedAt + 500)) < 1, `the rate's slot: ${(second.servedAt - first.servedAt).toFixed(3)} ms after the first`);
  });

  it('an unreported send (a dead worker) holds the next slot until one interval after its window', async () => {
    const { q, arena, first } = await firstLease(10, ['one', 'two'], 300);
    const second = await take(q, arena, 300);
    assert.ok(second.servedAt >= first.servedAt + 100 + 300, `${(second.servedAt - first.servedAt).toFixed(3)} ms after the first`);
  });

  it('a send still to come (its connection being made) renews the hold a window from then', async () => {
    const { q, arena, first } = await firstLease(10, ['one', 'two'], 300);
    await sleep(200);
    const renewedAt = await redisNow();
    assert.equal(await q.stillSending(first, 300), 'ok');
    const second = await take(q, arena, 300);
    assert.ok(second.servedAt >= renewedAt + 300 + 100, `${(second.servedAt - renewedAt).toFixed(3)} ms after the renewal`);
    assert.equal(await q.stillSending(first, 300), 'stale', 'the lapsed hold is not the queue\'s pending send any more');
  });

  it('without a window nothing waits for a report (the queue API as before)', async () => {
    const q = fx.queue();
    const arena = freshArena('sw');
    await q.setLimits(arena, { a: { rate: 10 } });
    await q.enqueue(arena, 'a', ['one', 'two']);
    const first = (await q.dequeue(arena)).lease;
    assert.ok(first);
    const second = await take(q, arena, 0);
    assert.ok(Math.abs(second.servedAt - (first.servedAt + 100)) < 1);
  });

  it('a dequeue resent after a lost reply gives a slot served ahead as that slot, not as now', async () => {
    const q = fx.queue();
    const arena = freshArena('sw');
    await q.setLimits(arena, { a: { rate: 2 } });
    await q.enqueue(arena, 'a', ['one', 'two']);
    const runner = new ScriptRunner(fx.redis);
    const keys = arenaKeys('weir', arena);
    // (Each call passes on the promise the one before was given, as a client does.)
    let promised = '';
    const call = async (base: string, window: number): Promise<ReturnType<typeof decodeDequeue>> => {
      const r = decodeDequeue(await runner.run('dequeue', keys, [base, 60000, '0', 1, promised, 1_000_000, '', 0, window]));
      if (r.promised !== '') promised = r.promised;
      return r;
    };
    for (const window of [0, 10_000]) {
      if (window > 0) await q.enqueue(arena, 'a', ['three', 'four']);
      const first = (await call(`lost-reply-a${window}`, window)).leases[0];
      assert.ok(first);
      if (window > 0) await q.sent({ arena, shard: arena, ...first, localServedAt: 0 }, true);
      // Served up to a second ahead: the next slot, some 500 ms from now.
      const ahead = (await call(`lost-reply-b${window}`, window)).leases[0];
      assert.ok(ahead);
      const now = await redisNow();
      assert.ok(ahead.servedAt > now + 300, 'served ahead of its slot');
      // The reply is lost; the client sends the same call again.
      const again = (await call(`lost-reply-b${window}`, window)).leases[0];
      promised = '';
      assert.equal(again?.token, ahead.token, 'the same lease');
      assert.ok(Math.abs((again?.servedAt ?? 0) - ahead.servedAt) < 0.01, `window ${window}: replayed servedAt ${again?.servedAt} vs the slot ${ahead.servedAt}`);
      await q.commit({ arena, shard: arena, ...ahead, localServedAt: 0 });
      await q.commit({ arena, shard: arena, ...first, localServedAt: 0 });
      await sleep(600);
    }
  });

  it('a slot moved earlier (a pause ended early, a send reported) is anyone\'s, not kept for the caller promised it at the old time', async () => {
    const arena = freshArena('sw');
    const setup = fx.queue();
    await setup.setLimits(arena, { a: { rate: 10 } });
    await setup.enqueue(arena, 'a', ['one', 'two', 'three']);
    const end = await setup.pause(arena, 'a', 3000);
    // A caller finds nothing and is promised the slot at the pause's end.
    const promised = await fx.queue().dequeue(arena);
    assert.equal(promised.lease, null);
    assert.ok(promised.waitMs !== null && promised.waitMs > 2000, `promised the slot ${promised.waitMs} ms away`);
    assert.equal((await setup.repause(arena, 'a', end, 0)).moved, true);
    const other = await fx.queue().dequeue(arena);
    assert.ok(other.lease, `served at once, not told to wait ${other.waitMs} ms for the old promise`);
    // And a send reported early: the same for the slot it frees.
    const window = fx.queue();
    const sentLease = (await take(window, arena, 10_000));
    const waiting = await fx.queue().dequeue(arena, { sendWindowMs: 10_000 });
    assert.equal(waiting.lease, null);
    assert.ok(waiting.waitMs !== null && waiting.waitMs > 5000, `promised the slot after the window, ${waiting.waitMs} ms away`);
    await window.sent(sentLease, true);
    await sleep(150);
    assert.ok((await fx.queue().dequeue(arena, { sendWindowMs: 10_000 })).lease, 'the slot after the report served to whoever asks');
  });

  it('a queue name holding a NUL byte is refused (a record keeps its pending send after one)', async () => {
    const q = fx.queue();
    await assert.rejects(q.setLimits(freshArena('sw'), { 'a\0b': { rate: 1 } }), { code: 'WEIR_BAD_NAME', message: /NUL/ });
  });
});
