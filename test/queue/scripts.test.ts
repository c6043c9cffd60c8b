/** How the scripts run: as one Redis function library (Redis ≥ 7), by SHA where functions are missing, reloaded when a server lost them. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { FairQueue } from '../../src/queue/index.js';
import { arenaKeys } from '../../src/queue/internal.js';
import { loadLibrary, loadScripts, ScriptRunner } from '../../src/queue/scripts.js';
import { scriptCalls, startRedis, type RedisServer } from '../helpers/redis.js';

/** Top-level locals each composed script must still have room for (Lua 5.1: 200 in scope at once). */
const HEADROOM = 30;

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

  // Lua 5.1 compiles a chunk with at most 200 locals in scope at once, and
  // every script's chunk holds the includes' top-level locals: a few more a
  // release until one day a script no longer loads. Each composed script and
  // the function library must load with HEADROOM more (the includes keep
  // their private helpers in do-blocks for this: lua/includes/*.lua).
  it(`every composed script, and the function library, loads with ${HEADROOM} more top-level locals`, async () => {
    const redis = new Redis({ port: server.port, host: '127.0.0.1' });
    const pad = (k: number): string => `local ${Array.from({ length: k }, (_, i) => `_pad${i}`).join(', ')}\n`;
    const compiles = async (src: string): Promise<true | string> => {
      try {
        await redis.script('LOAD', src);
        return true;
      } catch (err) {
        return (err as Error).message;
      }
    };
    try {
      for (const [name, s] of loadScripts()) {
        const at = s.source.indexOf('local function main()');
        assert.ok(at > 0, name);
        assert.equal(await compiles(s.source.slice(0, at) + pad(HEADROOM) + s.source.slice(at)), true, name);
      }
      const { code, name } = loadLibrary();
      const at = code.indexOf('local function main_');
      const padded = code.slice(0, at) + pad(HEADROOM) + code.slice(at);
      await redis.call('FUNCTION', 'LOAD', 'REPLACE', padded.replace(name, `${name}_padded`).replaceAll(`'${name}_`, `'${name}_padded_`));
      // The measure can fail: 200 more never fit.
      const dequeue = loadScripts().get('dequeue')?.source ?? '';
      const main = dequeue.indexOf('local function main()');
      assert.match(String(await compiles(dequeue.slice(0, main) + pad(200) + dequeue.slice(main))), /more than 200 local variables/);
    } finally {
      await redis.call('FUNCTION', 'FLUSH').catch(() => undefined);
      redis.disconnect();
    }
  });
});
