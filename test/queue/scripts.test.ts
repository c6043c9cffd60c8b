/** How the scripts run: as one Redis function library (Redis ≥ 7), by SHA where functions are missing, reloaded when a server lost them. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { FairQueue, arenaKeys } from '../../src/queue/index.js';
import { loadLibrary, ScriptRunner } from '../../src/queue/scripts.js';
import { scriptCalls, startRedis, type RedisServer } from '../helpers/redis.js';

async function count(redis: Redis, command: string): Promise<number> {
  return Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(await redis.info('commandstats'))?.[1] ?? 0);
}

/** A queue round trip through every kind of call a worker makes. */
async function roundTrip(q: FairQueue, arena: string): Promise<void> {
  await q.setLimits(arena, { a: { rate: 'unlimited' } });
  await q.configureDedupe(arena, { bits: 1024, hashes: 2 });
  assert.equal(await q.enqueue(arena, 'a', ['x', 'y', 'x'], { dedupe: [[1, 2], [3, 4], [1, 2]] }), 2);
  const first = await q.take(arena, { leaseMs: 60_000 });
  assert.ok(first);
  const { committed, next } = q.commitAndTake(first);
  assert.equal(await committed, 'ok');
  const second = await next;
  assert.ok(second);
  assert.equal(await q.commit(second), 'ok');
  const s = await q.stats(arena);
  assert.deepEqual([s.queued, s.leased, s.done], [0, 0, 2]);
}

describe('scripts', () => {
  let server: RedisServer;
  let plain: RedisServer;
  before(async () => {
    server = await startRedis();
    // A server whose FCALL is gone answers as a Redis before 7.0 does: unknown command.
    plain = await startRedis({ args: ['--rename-command', 'FCALL', ''] });
  });
  after(async () => {
    await server.destroy();
    await plain.destroy();
  });

  it('run as functions of one library, loaded by the first call that misses it; a server that lost it gets it again', async () => {
    const redis = new Redis({ port: server.port, host: '127.0.0.1' });
    try {
      const q = new FairQueue(redis);
      await roundTrip(q, 'fn-one');
      const library = (await redis.call('FUNCTION', 'LIST', 'LIBRARYNAME', loadLibrary().name)) as unknown[];
      assert.equal(library.length, 1, 'the library is loaded');
      assert.equal(await count(redis, 'evalsha'), 0);
      assert.equal(await count(redis, 'eval'), 0);
      assert.ok((await count(redis, 'fcall')) >= 5);
      // A restart without persistence, or a flush: the next call loads it again and goes on.
      await redis.call('FUNCTION', 'FLUSH');
      await roundTrip(new FairQueue(redis), 'fn-two');
      assert.equal(await count(redis, 'function\\|load'), 2);
    } finally {
      redis.disconnect();
    }
  });

  it('run by SHA on a server without functions, each script sent once', async () => {
    const redis = new Redis({ port: plain.port, host: '127.0.0.1' });
    try {
      await roundTrip(new FairQueue(redis), 'sha-one');
      await roundTrip(new FairQueue(redis), 'sha-two');
      assert.equal(await count(redis, 'fcall'), 0);
      assert.ok((await count(redis, 'evalsha')) >= 10);
      // EVAL only for each script's first call (NOSCRIPT): setLimits, configureDedupe, enqueue, dequeue, commit, stats.
      assert.ok((await count(redis, 'eval')) <= 6, `${await count(redis, 'eval')} EVALs`);
      assert.ok((await scriptCalls(redis)) >= 10);
    } finally {
      redis.disconnect();
    }
  });

  it('run by SHA for a user whose ACL allows scripts but not functions', async () => {
    const admin = new Redis({ port: server.port, host: '127.0.0.1' });
    try {
      await admin.call('FUNCTION', 'FLUSH');
      await admin.call('ACL', 'SETUSER', 'nofcall', 'on', '>pw', '~*', '+@all', '-fcall');
      await admin.call('ACL', 'SETUSER', 'noload', 'on', '>pw', '~*', '+@all', '-function');
      for (const username of ['nofcall', 'noload']) {
        const redis = new Redis({ port: server.port, host: '127.0.0.1', username, password: 'pw' });
        try {
          const before = await count(admin, 'evalsha');
          await roundTrip(new FairQueue(redis), `acl-${username}`);
          assert.ok((await count(admin, 'evalsha')) - before >= 5, username);
        } finally {
          redis.disconnect();
        }
      }
    } finally {
      await admin.call('ACL', 'DELUSER', 'nofcall', 'noload');
      admin.disconnect();
    }
  });

  it('errors keep their codes either way', async () => {
    for (const port of [server.port, plain.port]) {
      const redis = new Redis({ port, host: '127.0.0.1' });
      try {
        const runner = new ScriptRunner(redis);
        await assert.rejects(runner.run('dequeue', arenaKeys('weir', 'err'), ['short', 1000]), { code: 'WEIR_BAD_ARGS' });
        await assert.rejects(runner.run('dequeue', ['only-one-key'], ['long-enough-token', 1000, '0', 1, '', 0, '', 0]), { code: 'WEIR_BAD_ARGS' });
      } finally {
        redis.disconnect();
      }
    }
  });
});
