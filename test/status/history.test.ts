/** History and worker heartbeats as the workers write them, on a real redis-server. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HISTORY, HistoryWriter, readHistory, workersSeen } from '../../src/crawl/counters/history.js';
import { crawlKeys } from '../../src/crawl/store/keys.js';
import { Tally } from '../../src/crawl/counters/tally.js';
import { FairQueue } from '../../src/queue/index.js';
import { useRedis } from '../helpers/fixture.js';

const fx = useRedis();

describe('status history', () => {
  it("a worker's counters: a second's worth in one script call, added to what is there (1,500 domains)", async () => {
    const keys = crawlKeys('tallies', new FairQueue(fx.redis, {}));
    await fx.redis.hset(keys.stats, 'd7.org:pages', '40', '*:pages', '1000');
    const tally = new Tally();
    for (let i = 0; i < 1500; i++) tally.add(`d${i}.org`, 'pages', i + 1);
    tally.add('d7.org', 'bytes', 2 ** 40);
    const calls = async (cmd: string): Promise<number> => Number(new RegExp(`cmdstat_${cmd}:calls=(\\d+)`).exec(await fx.redis.info('commandstats'))?.[1] ?? 0);
    const [hincrby, evals] = [await calls('hincrby'), await calls('eval')];
    await tally.flush(fx.redis, keys.stats);
    // One call from the client; inside it, an HINCRBY a field (Redis counts those
    // too): 1,500 domains' pages, d7.org's bytes, and the arena's two totals.
    assert.equal((await calls('eval')) - evals, 1);
    assert.equal((await calls('hincrby')) - hincrby, 1503);
    const got = await fx.redis.hgetall(keys.stats);
    assert.equal(got['d0.org:pages'], '1');
    assert.equal(got['d1499.org:pages'], '1500');
    assert.equal(got['d7.org:pages'], String(40 + 8));
    assert.equal(got['d7.org:bytes'], String(2 ** 40));
    assert.equal(got['*:pages'], String(1000 + (1500 * 1501) / 2));
    // Nothing pending: the next flush writes no counts.
    await tally.flush(fx.redis, keys.stats);
    assert.equal((await calls('eval')) - evals, 1);
  });

  it('requests per domain and the arena pages per 5 s bucket, per second, expiring after the retention; workers seen', async () => {
    const keys = crawlKeys('hist', new FairQueue(fx.redis, {}));
    const t0 = Math.floor(Number((await fx.redis.time())[0]) / 5) * 5000 - 60_000;
    let now = t0;
    const tally = new Tally(undefined, new HistoryWriter(keys, () => now, () => 2.5e-9, 'w1'));
    tally.add('a.org', 'pages', 10);
    tally.add('a.org', 'robotsFetches', 1);
    tally.add('a.org', 'bytes', 5000);
    tally.add('b.org', 'redirects', 3);
    now += HISTORY.bucketMs;
    tally.add('a.org', 'pages', 5);
    await tally.flush(fx.redis, keys.stats);
    const h = await readHistory(fx.redis, keys, ['a.org', 'b.org', 'c.org'], t0 + 2 * HISTORY.bucketMs + 1);
    assert.equal(h.pages.length, HISTORY.buckets);
    assert.equal(h.from + HISTORY.buckets * HISTORY.bucketMs, t0 + 2 * HISTORY.bucketMs, 'up to the last complete bucket');
    assert.deepEqual(h.domains['a.org']?.slice(-2), [11 / 5, 5 / 5]);
    assert.deepEqual(h.domains['b.org']?.slice(-2), [3 / 5, 0]);
    assert.deepEqual(h.pages.slice(-2), [2, 1]);
    assert.ok(h.domains['c.org']?.every((v) => v === 0));
    const ttl = await fx.redis.pttl(keys.history(t0 / HISTORY.bucketMs));
    assert.ok(ttl > 0 && ttl <= HISTORY.bucketMs * (HISTORY.buckets + 2), `ttl ${ttl}`);

    assert.equal(await workersSeen(fx.redis, keys, now), 1);
    assert.equal(await workersSeen(fx.redis, keys, now + HISTORY.workerSeenMs + 1), 0);
    // A worker silent for an hour is pruned by the next flush of any worker.
    now += HISTORY.workerForgetMs + 1;
    await new Tally(undefined, new HistoryWriter(keys, () => now, () => 0, 'w2')).flush(fx.redis, keys.stats);
    assert.deepEqual(await fx.redis.zrange(keys.workers, 0, -1), ['w2']);
    // Each worker's local filter rate, kept after it ends (what it dropped stays dropped).
    assert.deepEqual(await fx.redis.hgetall(keys.localFp), { w1: '2.500e-9', w2: '0.000e+0' });
  });
});
