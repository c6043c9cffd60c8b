/**
 * Each script's reply, as the server sends it, decoded by named fields
 * (src/queue/replies.ts); and the wake listener on a real blocking connection.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { arenaKeys, ScriptRunner } from '../../src/queue/internal.js';
import { decodeDead, decodeDequeue, decodeExtend, decodeOutcome, decodeRetry, decodeStats } from '../../src/queue/replies.js';
import { WakeListener } from '../../src/queue/wake.js';
import { freshArena, sleep, useRedis } from '../helpers/fixture.js';

const fx = useRedis();

describe('script replies', () => {
  it('dequeue, commit, extend, retry, release, fail, dead and stats decode into their named fields', async () => {
    const q = fx.queue();
    const arena = freshArena();
    const run = new ScriptRunner(fx.redis);
    const call = (name: Parameters<ScriptRunner['run']>[0], args: (string | number)[]): Promise<unknown> => run.run(name, arenaKeys('weir', arena), args);
    await q.setLimits(arena, { a: { rate: 4 }, b: { rate: 'unlimited' } });
    await q.enqueue(arena, 'a', ['x1']);
    await q.enqueue(arena, 'b', ['y1', 'y2', 'y3']);
    const [sec] = await fx.redis.time();
    const d = decodeDequeue(await call('dequeue', ['base-token-1', 60_000, '0', 4, '', 0, '', 0, 0]));
    assert.equal(d.leases.length, 4);
    assert.ok(Math.abs(d.nowMs / 1000 - Number(sec)) < 5, 'nowMs is Redis time in ms');
    const la = d.leases.find((l) => l.queue === 'a');
    assert.ok(la);
    assert.deepEqual({ ...la, expiresAt: 0, servedAt: 0 }, { token: la.token, queue: 'a', item: 'x1', attempt: 1, expiresAt: 0, servedAt: 0, intervalMs: 250, capped: false });
    assert.ok(la.token.startsWith('base-token-1.'));
    assert.ok(Math.abs(la.expiresAt - la.servedAt - 60_000) < 1);
    assert.equal(d.leases.filter((l) => l.queue === 'b').every((l) => l.intervalMs === 0), true);
    // No queue here has an in-flight cap: no serve leaves one capped.
    assert.equal(d.leases.some((l) => l.capped), false);
    assert.ok(d.waitUs === 0 || (d.waitUs !== null && d.waitUs > 0));
    const [l1, l2, l3] = d.leases.filter((l) => l.queue === 'b');
    assert.ok(l1 && l2 && l3);
    assert.deepEqual((await call('commit', [l1.token, 'nope'])), [1, 0]);
    assert.deepEqual(((await call('commit', [l1.token])) as unknown[]).map(decodeOutcome), ['stale']);
    assert.ok((decodeExtend(await call('extend', [l2.token, 5000])) ?? 0) > d.nowMs);
    assert.equal(decodeExtend(await call('extend', ['nope', 5000])), null);
    assert.equal(decodeRetry(await call('retry', [l2.token, 0, 'again', '1'])), 'ok');
    assert.equal(decodeOutcome(await call('fail', [l3.token, 'broken'])), 'ok');
    assert.equal(decodeOutcome(await call('release', [la.token])), 'ok');
    const dead = decodeDead(await call('dead', [0, 10]));
    assert.equal(dead.length, 1);
    assert.deepEqual({ ...dead[0], at: 0 }, { queue: 'b', item: 'y3', reason: 'broken', attempts: 1, at: 0 });
    const s = decodeStats(await call('stats', [1, 10]));
    assert.deepEqual(
      { ...s.arena, now: 0 },
      { queued: 2, leased: 0, delayed: 0, done: 1, dead: 1, enqueued: 4, queues: 2, held: false, maxAttempts: 5, dedupe: null, drained: false, exists: true, expired: 0, now: 0 },
    );
    assert.equal(s.cursor, null);
    assert.deepEqual(
      s.queues.map((x) => [x.name, x.rate, x.queued, x.done, x.dead]),
      [
        ['a', 4, 1, 0, 0],
        ['b', 'unlimited', 1, 1, 1],
      ],
    );
    const held = decodeDequeue(await (async () => (await q.hold(arena), call('dequeue', ['base-token-2', 60_000, '0', 1, '', 0, '', 0, 0])))());
    assert.deepEqual({ waitUs: held.waitUs, promised: held.promised, leases: held.leases }, { waitUs: null, promised: '', leases: [] });
  });
});

describe('wake listener', () => {
  it('a token wakes one waiter (the oldest); a timeout and an abort resolve false', async () => {
    const key = `weir:{${freshArena()}}:wake`;
    const l = new WakeListener(fx.server.client(), key);
    try {
      const first = l.wait(5000);
      const second = l.wait(300);
      await sleep(50);
      await fx.redis.rpush(key, '1');
      assert.equal(await first, true);
      assert.equal(await second, false, 'one token wakes one waiter');
      const ac = new AbortController();
      const aborted = l.wait(5000, ac.signal);
      ac.abort();
      assert.equal(await aborted, false);
      const started = performance.now();
      assert.equal(await l.wait(100), false);
      assert.ok(performance.now() - started >= 99, 'a local deadline, not Redis hz');
    } finally {
      l.close();
    }
  });

  it('close ends every wait', async () => {
    const l = new WakeListener(fx.server.client(), `weir:{${freshArena()}}:wake`);
    const w = l.wait(null);
    l.close();
    assert.equal(await w, false);
    assert.equal(await l.wait(1000), false, 'closed: no more waiting');
  });
});
