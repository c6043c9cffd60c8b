/**
 * Send reports without a reply (OneWayCalls, src/queue/script-call.ts): reportSent moves
 * the queue's next slot as sent() does, on a connection of its own that
 * gets no reply; a server that refuses CLIENT REPLY gets them the
 * ordinary way.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { FairQueue, type Lease } from '../../src/queue/index.js';
import { ScriptRunner } from '../../src/queue/scripts.js';
import { freshArena, sleep, useRedis } from '../helpers/fixture.js';

const fx = useRedis();

/** Redis's clock, ms. */
async function redisNow(redis: Redis): Promise<number> {
  const [s, us] = await redis.time();
  return Number(s) * 1000 + Number(us) / 1000;
}

/** CLIENT REPLY calls the server has run (INFO commandstats). */
async function clientReplyCalls(redis: Redis): Promise<number> {
  const m = /^cmdstat_client\|reply:calls=(\d+)/m.exec(await redis.info('commandstats'));
  return m ? Number(m[1]) : 0;
}

async function take(q: FairQueue, arena: string): Promise<Lease> {
  for (let i = 0; i < 1000; i++) {
    const r = await q.dequeue(arena, { sendWindowMs: 10_000, aheadMs: 1000 });
    if (r.lease) return r.lease;
    await sleep(5);
  }
  throw new Error('no lease in 1,000 calls');
}

/** Counts the ordinary (awaited, replied) runs of the send report while `fn` runs. */
async function ordinaryReports<T>(fn: () => Promise<T>): Promise<{ out: T; ordinary: number }> {
  let ordinary = 0;
  // eslint-disable-next-line @typescript-eslint/unbound-method -- re-bound with .call below
  const original = ScriptRunner.prototype.run;
  ScriptRunner.prototype.run = function (this: ScriptRunner, name: string, keys, args) {
    if (name === 'sent') ordinary++;
    return original.call(this, name, keys, args);
  };
  try {
    return { out: await fn(), ordinary };
  } finally {
    ScriptRunner.prototype.run = original;
  }
}

/**
 * Four leases of a 10/s queue with a send window, each reported with
 * reportSent; each next lease must come at least the interval and margin
 * after its report. The first report opens the link and goes the ordinary
 * way. Returns the ordinary runs of the later three.
 */
async function reportsKeepTheSchedule(q: FairQueue, observer: Redis): Promise<number> {
  const arena = freshArena('ow');
  await q.setLimits(arena, { a: { rate: 10 } });
  await q.enqueue(arena, 'a', ['1', '2', '3', '4', '5']);
  let lease = await take(q, arena);
  q.reportSent(lease, true, 3);
  lease = await take(q, arena);
  // (The link's handshake: a few round trips.)
  await sleep(100);
  const { ordinary } = await ordinaryReports(async () => {
    for (let round = 0; round < 3; round++) {
      const sentAt = await redisNow(observer);
      q.reportSent(lease, true, 3);
      const next = await take(q, arena);
      assert.ok(next.servedAt >= sentAt + 100 + 3, `round ${round}: the next slot ${(next.servedAt - sentAt).toFixed(3)} ms after the report: at least the interval and margin`);
      assert.ok(next.servedAt - sentAt < 5000, `round ${round}: the report arrived (the window is 10 s)`);
      lease = next;
    }
  });
  return ordinary;
}

describe('send reports without a reply', () => {
  it('go on a link that gets no reply, and the next slot keeps to them', async () => {
    const q = fx.queue();
    const before = await clientReplyCalls(fx.redis);
    assert.equal(await reportsKeepTheSchedule(q, fx.redis), 0, 'no report after the first went the ordinary way');
    assert.equal((await clientReplyCalls(fx.redis)) - before, 1, 'the link said CLIENT REPLY OFF once');
    const links = String(await fx.redis.client('LIST')).trim().split('\n').length;
    await q.close();
    await sleep(50);
    assert.equal(String(await fx.redis.client('LIST')).trim().split('\n').length, links - 1, 'close() closes the link');
  });

  it('replylessReports: false sends them the ordinary way', async () => {
    const q = fx.queue({ replylessReports: false });
    const before = await clientReplyCalls(fx.redis);
    assert.equal(await reportsKeepTheSchedule(q, fx.redis), 3);
    assert.equal((await clientReplyCalls(fx.redis)) - before, 0, 'no link was made');
  });

  it('a server that refuses CLIENT REPLY gets its reports the ordinary way', async () => {
    await fx.redis.call('ACL', 'SETUSER', 'noreply', 'on', '>pw', '~*', '&*', '+@all', '-client|reply');
    const redis = new Redis({ port: fx.server.port, host: '127.0.0.1', username: 'noreply', password: 'pw', maxRetriesPerRequest: null });
    const q = new FairQueue(redis);
    try {
      assert.equal(await reportsKeepTheSchedule(q, fx.redis), 3, 'every report after the refusal went the ordinary way');
      const denied = (await fx.redis.call('ACL', 'LOG')) as unknown[][];
      assert.ok(
        denied.some((entry) => entry.includes('client|reply')),
        'CLIENT REPLY OFF was refused',
      );
    } finally {
      await q.close();
      redis.disconnect();
      await fx.redis.call('ACL', 'DELUSER', 'noreply');
    }
  });
});
