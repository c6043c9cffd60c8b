/** reportPace (lua/pace.lua): a queue's interval learned from its site's answers, applied where every rate is. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { arenaKey } from '../../src/queue/keys.js';
import { freshArena, useRedis } from '../helpers/fixture.js';

const fx = useRedis();
const BOUNDS = { delayFactor: 2, maxDelayMs: 5000 };

describe('reportPace', () => {
  it('follows the rule: delayFactor × the smoothed time at once when longer, × 0.75 toward it when shorter, × 2 on errors, within [1/rate, maxDelayMs]', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { a: { rate: 10 } });
    // (The interval in ms, to the µs: 0.3 × 380 is not exact in binary.)
    const report = async (ms: number, healthy = true): Promise<number> => Math.round(((await q.reportPace(arena, 'a', { ms, healthy, ...BOUNDS })) ?? NaN) * 100) / 100;
    // Fast answers: the target (2 × 20 ms) is under the limit's 100 ms: the limit rules.
    assert.equal(await report(20), 100);
    // avg 20 + 0.3 × (400 − 20) = 134: target 268 ms, longer: at once.
    assert.equal(Math.round(await report(400)), 268);
    // avg 134 + 0.3 × (20 − 134) = 99.8: target 199.6, shorter: 268 × 0.75 = 201.
    assert.equal(Math.round(await report(20)), 201);
    // An error doubles it.
    assert.equal(Math.round(await report(20, false)), 402);
    // Up to maxDelayMs at most, however many errors.
    for (let i = 0; i < 10; i++) await report(20, false);
    assert.equal(await report(20, false), 5000);
    const stats = (await q.allQueueStats(arena))[0];
    assert.deepEqual([stats?.rate, stats?.pace], [10, 0.2], 'the limit as configured, the pace in force');
    // Recovers a quarter at a time, to the limit and never past it.
    let iv = 5000;
    for (let i = 0; i < 40 && iv > 100; i++) iv = await report(20);
    assert.equal(iv, 100);
    assert.equal((await q.allQueueStats(arena))[0]?.pace, 10);
    assert.equal(await q.reportPace(arena, 'nope', { ms: 1, healthy: true, ...BOUNDS }), null);
  });

  it('an unlimited queue gets an interval only while its site is slow or failing; an error starts the back-off at 200 ms', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { u: { rate: 'unlimited' } });
    assert.equal(await q.reportPace(arena, 'u', { ms: 0, healthy: true, ...BOUNDS }), 0);
    assert.equal(await q.reportPace(arena, 'u', { ms: 0, healthy: false, ...BOUNDS }), 200);
    assert.equal((await q.allQueueStats(arena))[0]?.pace, 5);
  });

  it('the learned interval is what the queue is served by, from its last serve', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { a: { rate: 10 } });
    await q.enqueue(arena, 'a', ['1', '2']);
    const first = await q.dequeue(arena);
    assert.ok(first.lease);
    // Reported after that serve: the next slot moves out to 800 ms after it.
    assert.equal(await q.reportPace(arena, 'a', { ms: 400, healthy: true, ...BOUNDS }), 800);
    const second = await q.dequeue(arena);
    assert.equal(second.lease, null);
    assert.ok((second.waitMs ?? 0) > 500, `waits ${second.waitMs} ms, where the limit alone would allow the next at 100 ms`);
  });

  it("a rate its interval reads back as keeps no ':rate' beside the record; each is shown as configured, before and after a learned pace", async () => {
    const q = fx.queue();
    const arena = freshArena();
    const third = 1 / 3;
    await q.setLimits(arena, { two: { rate: 2 }, third: { rate: third }, none: { rate: 'unlimited' }, seven: { rate: 7 } });
    await q.enqueue(arena, 'made', ['m'], { create: { rate: 0.5, maxInFlight: 0 } });
    const ids = await fx.redis.hgetall(arenaKey('weir', arena, 'qids'));
    const kept = async (name: string): Promise<string | null> => fx.redis.hget(arenaKey('weir', arena, 'queues'), `${ids[name] as string}:rate`);
    // (1e6 / (1e6 / 7) is not 7 in binary: kept.)
    assert.deepEqual(await Promise.all(['two', 'third', 'none', 'seven', 'made'].map(kept)), [null, null, null, (7).toPrecision(17), null]);
    const rates = async (): Promise<Record<string, number | 'unlimited'>> => Object.fromEntries((await q.allQueueStats(arena)).map((s) => [s.name, s.rate]));
    const configured = { two: 2, third, none: 'unlimited', seven: 7, made: 0.5 };
    assert.deepEqual(await rates(), configured);
    // A learned pace slower than the rate: the configured rate is written down first, and the pace eases back to it.
    assert.equal(await q.reportPace(arena, 'two', { ms: 2000, healthy: true, ...BOUNDS }), 4000);
    assert.equal(Number(await kept('two')), 2);
    assert.deepEqual(await rates(), configured);
    let iv = 4000;
    for (let i = 0; i < 40 && iv > 500; i++) iv = (await q.reportPace(arena, 'two', { ms: 1, healthy: true, ...BOUNDS })) ?? NaN;
    assert.equal(iv, 500);
    // A report that leaves the interval as it was writes nothing.
    assert.equal(await q.reportPace(arena, 'third', { ms: 1, healthy: true, ...BOUNDS }), 3000);
    assert.equal(await kept('third'), null);
  });

  it("setLimits and a tightening enqueue keep ':rate' only where the interval in force does not read back as it: dropped for a rate that does, kept beside a longer learned pace", async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { a: { rate: 2 }, b: { rate: 10 } });
    const ids = await fx.redis.hgetall(arenaKey('weir', arena, 'qids'));
    const kept = async (name: string): Promise<string | null> => fx.redis.hget(arenaKey('weir', arena, 'queues'), `${ids[name] as string}:rate`);
    const rateOf = async (name: string): Promise<number | 'unlimited' | undefined> => (await q.namedQueueStats(arena, [name]))[0]?.rate;
    // Set to 7 (kept), then to 1 (reads back: dropped), then 7 again.
    await q.setLimits(arena, { a: { rate: 7 } });
    assert.equal(Number(await kept('a')), 7);
    await q.setLimits(arena, { a: { rate: 1 } });
    assert.equal(await kept('a'), null);
    assert.equal(await rateOf('a'), 1);
    await q.setLimits(arena, { a: { rate: 7 } });
    assert.equal(await rateOf('a'), 7);
    // b learns a pace of 4 s; a tightening to 0.5/s keeps the longer pace in force, so the rate is written down.
    assert.equal(await q.reportPace(arena, 'b', { ms: 2000, healthy: true, ...BOUNDS }), 4000);
    await q.enqueue(arena, 'b', ['x'], { create: { rate: 0.5, maxInFlight: 0 }, lower: true });
    assert.equal(Number(await kept('b')), 0.5);
    assert.equal(await rateOf('b'), 0.5);
    // Eased back, the pace reaches the new rate's 2 s and no lower.
    let iv = 4000;
    for (let i = 0; i < 40 && iv > 2000; i++) iv = (await q.reportPace(arena, 'b', { ms: 1, healthy: true, ...BOUNDS })) ?? NaN;
    assert.equal(iv, 2000);
  });

  it('setLimits keeps a learned pace longer than the rate it sets, and the longest floor its sources ask (Crawl-delays by origin) whatever rate later calls give; a floor withdrawn, the next longest', async () => {
    const q = fx.queue();
    const arena = freshArena();
    const stats = async (name: string): Promise<[unknown, unknown]> => {
      const s = (await q.namedQueueStats(arena, [name]))[0];
      return [s?.rate, s?.pace];
    };
    await q.setLimits(arena, { a: { rate: 10 }, b: { rate: 10 } });
    // a learns 1 s; its limits set again (a second kickoff's) do not undo it.
    assert.equal(await q.reportPace(arena, 'a', { ms: 500, healthy: true, ...BOUNDS }), 1000);
    await q.setLimits(arena, { a: { rate: 10 } });
    assert.deepEqual(await stats('a'), [10, 1]);
    // Set to 0.5/s, slower than the pace: the rate rules.
    await q.setLimits(arena, { a: { rate: 0.5 } });
    assert.deepEqual(await stats('a'), [0.5, 0.5]);
    // b: one origin asks 200 ms (5/s): its rate is written as the floor's.
    const floor = (source: string, ms: number): { floor: { source: string; ms: number } } => ({ floor: { source, ms } });
    await q.setLimits(arena, { b: { rate: 10 } }, floor('https://b', 200));
    assert.deepEqual(await stats('b'), [5, 5]);
    // Set again at 50/s, as a seed's limits are by every kickoff: the floor stands.
    await q.setLimits(arena, { b: { rate: 50 } });
    assert.deepEqual(await stats('b'), [5, 5]);
    // A slower rate than the floor rules; the floor still stands under it.
    await q.setLimits(arena, { b: { rate: 2 } });
    assert.deepEqual(await stats('b'), [2, 2]);
    await q.setLimits(arena, { b: { rate: 50 } });
    assert.deepEqual(await stats('b'), [5, 5]);
    // A second origin asks 1 s: the longest stands; withdrawn, the first's again; both withdrawn, the rate given.
    await q.setLimits(arena, { b: { rate: 50 } }, floor('https://www.b', 1000));
    assert.deepEqual(await stats('b'), [1, 1]);
    await q.setLimits(arena, { b: { rate: 50 } }, floor('https://www.b', 0));
    assert.deepEqual(await stats('b'), [5, 5]);
    await q.setLimits(arena, { b: { rate: 50 } }, floor('https://b', 0));
    assert.deepEqual(await stats('b'), [50, 50]);
    const ids = await fx.redis.hgetall(arenaKey('weir', arena, 'qids'));
    assert.equal(await fx.redis.hget(arenaKey('weir', arena, 'queues'), `${ids.b as string}:floor`), null, 'no floor left: no field');
    // A queue made with a floor starts at it.
    assert.equal(await q.setLimits(arena, { c: { rate: 'unlimited' } }, floor('https://c', 1000)), 1);
    assert.deepEqual(await stats('c'), [1, 1]);
    // Past 64 sources, floors merge into one that is never withdrawn (the longest kept, never a shorter one).
    for (let i = 0; i < 64; i++) await q.setLimits(arena, { d: { rate: 50 } }, floor(`https://s${i}.d`, 100));
    await q.setLimits(arena, { d: { rate: 50 } }, floor('https://late.d', 2000));
    assert.deepEqual(await stats('d'), [0.5, 0.5]);
    await q.setLimits(arena, { d: { rate: 50 } }, floor('https://late.d', 0));
    assert.deepEqual(await stats('d'), [0.5, 0.5], 'a merged floor stays');
    await assert.rejects(q.setLimits(arena, { c: { rate: 1 } }, floor('https://c', -1)), /floor ms must be/);
    await assert.rejects(q.setLimits(arena, { c: { rate: 1 } }, floor('*', 1)), /floor source/);
    await assert.rejects(q.setLimits(arena, { c: { rate: 1 } }, { ...floor('https://c', 1), lower: true }), /do not go together/);
  });

  it('setLimits writes nothing for a queue whose limits stay as they are', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { a: { rate: 7, maxInFlight: 2 }, b: { rate: 1 } });
    await q.enqueue(arena, 'a', ['x']);
    // Writes by any script, counted by Redis (commandstats counts the commands scripts run).
    const writes = async (): Promise<number> => {
      const info = await fx.redis.info('commandstats');
      return [...info.matchAll(/cmdstat_(?:hset|hdel|zadd|zrem):calls=(\d+)/g)].reduce((n, m) => n + Number(m[1]), 0);
    };
    const w0 = await writes();
    await q.setLimits(arena, { a: { rate: 7, maxInFlight: 2 }, b: { rate: 1 } });
    assert.equal((await writes()) - w0, 0, 'the same limits again: nothing written');
    const w1 = await writes();
    await q.setLimits(arena, { a: { rate: 7, maxInFlight: 3 } });
    assert.ok((await writes()) - w1 > 0, "a's cap changed: written");
    assert.equal((await q.namedQueueStats(arena, ['a']))[0]?.maxInFlight, 3);
  });

  it('bad reports are refused before anything is written', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { a: { rate: 10 } });
    await assert.rejects(q.reportPace(arena, 'a', { ms: -1, healthy: true, ...BOUNDS }), { code: 'WEIR_BAD_ARGS' });
    await assert.rejects(q.reportPace(arena, 'a', { ms: 1, healthy: true, delayFactor: Number.NaN, maxDelayMs: 10 }), { code: 'WEIR_BAD_ARGS' });
    await assert.rejects(q.reportPace(arena, 'a', { ms: 1, healthy: true, delayFactor: 1, maxDelayMs: 0 }), { code: 'WEIR_BAD_ARGS' });
    assert.equal((await q.allQueueStats(arena))[0]?.pace, 10);
  });
});
