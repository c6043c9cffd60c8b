/** A script call encoded as one Buffer (src/queue/script-call.ts): the very bytes ioredis would send, and its reply as ioredis gives it. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Command, Redis } from 'ioredis';
import { FairQueue } from '../../src/queue/index.js';
import { EncodedCommand } from '../../src/queue/script-call.js';
import { useRedis } from '../helpers/fixture.js';

const fx = useRedis();

/** What ioredis itself writes for the same command. */
function ioredisBytes(name: string, args: (string | number)[]): Buffer {
  const c = new Command(name, args, { replyEncoding: 'utf8' });
  const w = c.toWritable({});
  return typeof w === 'string' ? Buffer.from(w) : w;
}

describe('script calls encoded as one Buffer', () => {
  it('writes the bytes ioredis writes: strings of any script, numbers of every kind, empty strings', () => {
    const tail: (string | number)[] = ['', 'plain', 'é ü 日本 🙂', '{"u":"https://example.com/a?b=c"}', 0, 7, 10, 99, 100, 123456789, 2 ** 53 - 1, -5, 1.5, 1e21, 'x'.repeat(70_000)];
    const head: (string | number)[] = ['weir_abc_enqueue', 2, '{a}:k1', '{a}:k2'];
    assert.deepEqual(new EncodedCommand('FCALL', [...head], tail).toWritable(), ioredisBytes('FCALL', [...head, ...tail]));
    assert.deepEqual(new EncodedCommand('FCALL', ['f', 0], []).toWritable(), ioredisBytes('FCALL', ['f', 0]));
  });

  it('sent to Redis, its reply is a string as with ioredis own commands; a key prefix applies to its keys', async () => {
    const c = new EncodedCommand('EVAL', ["return {KEYS[1], ARGV[1], ARGV[2], #ARGV}", 1, 'k'], ['日本', 42]);
    void fx.redis.sendCommand(c);
    assert.deepEqual(await c.promise, ['k', '日本', '42', 2]);
    const prefixed = new Redis({ host: '127.0.0.1', port: fx.server.port, keyPrefix: 'pre:' });
    try {
      const p = new EncodedCommand('EVAL', ['return KEYS[1]', 1, 'k'], [], { keyPrefix: 'pre:' });
      void prefixed.sendCommand(p);
      assert.equal(await p.promise, 'pre:k');
      // A queue on such a client: its scripts' keys carry the client's prefix, as with any ioredis command.
      const q = new FairQueue(prefixed);
      await q.setLimits('pfx', { a: { rate: 'unlimited' } });
      await q.enqueue('pfx', 'a', ['item']);
      assert.equal((await q.dequeue('pfx')).lease?.item, 'item');
      const keys = await fx.redis.keys('*pfx*');
      assert.ok(keys.length > 0 && keys.every((k) => k.startsWith('pre:')), keys.join(' '));
      await q.close();
    } finally {
      prefixed.disconnect();
    }
  });
});
