/**
 * Costs as the arena grows (BENCH_PART=flat of npm run bench:queue): one
 * redis-server, arenas of 10^2, 10^4 and 10^6 queues (BENCH_FLAT_QUEUES to
 * change the list), each with every queue holding URLs, measured side by
 * side in one run:
 *   - enqueue: BENCH_N 60-byte items, one per call, spread over every queue
 *     (64 calls in flight, merged per turn as a crawler's are): Redis CPU per item;
 *   - dequeue+commit (commitAndTake, 64 loops): Redis CPU per item;
 *   - Redis memory per queue (made, empty) and per queued item;
 *   - the floor: a bare script touching structures of the same size (FLOOR_SCRIPT).
 * The ratio to the smallest arena is the figure to read (issue: ≤ 1.2×).
 */
import { Redis } from 'ioredis';
import { FairQueue, type Lease } from '../src/queue/index.js';
import { threeMasters, usageOf } from './cluster-cost.js';
import { drive, item } from './queue-cost.js';
import { redisUsage } from './redis-usage.js';

type Out = (name: string, value: string, note?: string) => void;

async function usedMemory(redis: Redis): Promise<number> {
  for (;;) {
    const info = await redis.info('memory');
    if (Number(/lazyfree_pending_objects:(\d+)/.exec(info)?.[1] ?? 0) === 0) return Number(/used_memory:(\d+)/.exec(info)?.[1] ?? 0);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Redis CPU µs per item of `total` items done by `loops` loops of `op`. */
async function cpuPerItem(redis: Redis, total: number, loops: number, op: () => Promise<number>): Promise<{ us: number; perSecond: number }> {
  const before = await redisUsage(redis);
  const { done, perSecond } = await drive(total, loops, op);
  const after = await redisUsage(redis);
  return { us: ((after.cpu - before.cpu) * 1e6) / done, perSecond };
}

/** The same on several nodes: each one's µs per item. */
async function cpuPerItemOn(ports: number[], total: number, loops: number, op: () => Promise<number>): Promise<{ us: number[]; perSecond: number }> {
  const before = await usageOf(ports);
  const { done, perSecond } = await drive(total, loops, op);
  const after = await usageOf(ports);
  return { us: after.map((a, i) => ((a.cpu - (before[i]?.cpu ?? 0)) * 1e6) / done), perSecond };
}

async function usedMemoryOn(ports: number[]): Promise<number[]> {
  return Promise.all(
    ports.map(async (port) => {
      const r = new Redis({ port, host: '127.0.0.1' });
      try {
        return await usedMemory(r);
      } finally {
        r.disconnect();
      }
    }),
  );
}

const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);

/**
 * The same arenas on a local 3-master Cluster (12 shards, 4 a master):
 * per master, Redis CPU per arena-wide item and memory per queue, as the
 * arena grows (BENCH_PART=flat with BENCH_FLAT_CLUSTER=1).
 */
export async function flatClusterBenchmarks(n: number, out: Out): Promise<void> {
  const sizes = (process.env.BENCH_FLAT_QUEUES ?? '100,10000,1000000').split(',').map(Number);
  const nodes = await threeMasters();
  const client = nodes.client();
  const q = new FairQueue(client);
  const base: { enqueue?: number; take?: number } = {};
  try {
    for (const queues of sizes) {
      const arena = `cflat${queues}`;
      await q.fixShards(arena);
      const name = (i: number): string => `site-${String(i).padStart(7, '0')}.example`;
      const m0 = await usedMemoryOn(nodes.ports);
      for (let i = 0; i < queues; i += 10_000) {
        await q.setLimits(arena, Object.fromEntries(Array.from({ length: Math.min(10_000, queues - i) }, (_, k) => [name(i + k), { rate: 'unlimited' as const }])));
      }
      const m1 = await usedMemoryOn(nodes.ports);
      const fill = Math.max(2 * queues, 3 * n);
      for (let k = 0; k < fill; k += 2000) await Promise.all(Array.from({ length: Math.min(2000, fill - k) }, (_, j) => q.enqueue(arena, name((k + j) % queues), [item(k + j)])));
      let i = fill;
      const enqueue = await cpuPerItemOn(nodes.ports, n, 64, async () => q.enqueue(arena, name(i % queues), [item(i++)]));
      const held = new Map<number, Lease | null>();
      let loop = 0;
      const take = await cpuPerItemOn(nodes.ports, n, 64, async () => {
        const me = loop++ % 64;
        const prev = held.get(me) ?? null;
        const next = prev ? await q.commitAndTake(prev).next : (await q.dequeue(arena)).lease;
        held.set(me, next);
        return prev ? 1 : 0;
      });
      for (const l of held.values()) if (l) await q.commit(l);
      base.enqueue ??= sum(enqueue.us);
      base.take ??= sum(take.us);
      const of = `${queues.toLocaleString('en-US')} queues, 3 masters`;
      const each = (us: number[]): string => us.map((u) => u.toFixed(1)).join(' / ');
      out(`enqueue, ${of}: Redis CPU per item`, `${sum(enqueue.us).toFixed(1)} µs`, `per master ${each(enqueue.us)} µs; ${(sum(enqueue.us) / base.enqueue).toFixed(2)}× the ${sizes[0]?.toLocaleString('en-US')}-queue arena's`);
      out(`dequeue+commit (commitAndTake), ${of}: Redis CPU per item`, `${sum(take.us).toFixed(1)} µs`, `per master ${each(take.us)} µs; ${(sum(take.us) / base.take).toFixed(2)}× the ${sizes[0]?.toLocaleString('en-US')}-queue arena's`);
      out(`memory, ${of}`, `${((sum(m1) - sum(m0)) / queues).toFixed(0)} B/queue`, `per master ${m1.map((m, k) => `${((m - (m0[k] ?? 0)) / 2 ** 20).toFixed(1)}`).join(' / ')} MiB for the queues`);
      await q.clear(arena);
    }
  } finally {
    await q.close();
    client.disconnect();
    await nodes.close();
  }
}

/**
 * The floor: what Redis itself pays for a structure's size. A script that
 * reads and writes one field of a hash of 3 fields per queue (records of
 * weir's size) and moves one member of a sorted set of one per queue, as
 * every queue operation does at least, per call with 64 in flight.
 */
const FLOOR_SCRIPT = `
local v = redis.call('HGET', KEYS[1], ARGV[1])
redis.call('HSET', KEYS[1], ARGV[1], v)
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
return 1`;

async function floorCost(redis: Redis, queues: number, n: number): Promise<number> {
  const [hash, zset] = ['flatfloor:h', 'flatfloor:z'];
  await redis.del(hash, zset);
  const value = 'x'.repeat(160);
  for (let i = 0; i < queues; i += 1000) {
    const p = redis.pipeline();
    for (let k = i; k < Math.min(queues, i + 1000); k++) {
      p.hset(hash, String(k), value, `${k}:rate`, 'unlimited', `${k}:t`, value);
      p.zadd(zset, k, String(k));
    }
    await p.exec();
  }
  let i = 0;
  const { us } = await cpuPerItem(redis, n, 64, async () => {
    const k = (i++ * 7919) % queues;
    await redis.eval(FLOOR_SCRIPT, 2, hash, zset, String(k), i);
    return 1;
  });
  await redis.del(hash, zset);
  return us;
}

export async function flatCostBenchmarks(redis: Redis, q: FairQueue, n: number, out: Out): Promise<void> {
  const sizes = (process.env.BENCH_FLAT_QUEUES ?? '100,10000,1000000').split(',').map(Number);
  const base: { enqueue?: number; take?: number; floor?: number } = {};
  for (const queues of sizes) {
    const arena = `flat${queues}`;
    const name = (i: number): string => `site-${String(i).padStart(7, '0')}.example`;
    const m0 = await usedMemory(redis);
    for (let i = 0; i < queues; i += 10_000) {
      await q.setLimits(arena, Object.fromEntries(Array.from({ length: Math.min(10_000, queues - i) }, (_, k) => [name(i + k), { rate: 'unlimited' as const }])));
    }
    const m1 = await usedMemory(redis);
    // Every queue holds URLs: at least 2 each, and enough for the runs below.
    const fill = Math.max(2 * queues, 3 * n);
    for (let k = 0; k < fill; k += 2000) await Promise.all(Array.from({ length: Math.min(2000, fill - k) }, (_, j) => q.enqueue(arena, name((k + j) % queues), [item(k + j)])));
    const m2 = await usedMemory(redis);
    let i = fill;
    const enqueue = await cpuPerItem(redis, n, 64, async () => q.enqueue(arena, name(i % queues), [item(i++)]));
    const held = new Map<number, Lease | null>();
    let loop = 0;
    const take = await cpuPerItem(redis, n, 64, async () => {
      const me = loop++ % 64;
      const prev = held.get(me) ?? null;
      const next = prev ? await q.commitAndTake(prev).next : (await q.dequeue(arena)).lease;
      held.set(me, next);
      return prev ? 1 : 0;
    });
    for (const l of held.values()) if (l) await q.commit(l);
    base.enqueue ??= enqueue.us;
    base.take ??= take.us;
    const floor = await floorCost(redis, queues, n);
    base.floor ??= floor;
    const of = `${queues.toLocaleString('en-US')} queues`;
    out(`floor, ${of}: a hash field read and written, a sorted-set member moved`, `${floor.toFixed(1)} µs`, `${(floor / base.floor).toFixed(2)}× at ${sizes[0]?.toLocaleString('en-US')} (Redis's own cost of size, per script call)`);
    out(`enqueue, ${of}: Redis CPU per item`, `${enqueue.us.toFixed(1)} µs`, `${(enqueue.us / base.enqueue).toFixed(2)}× the ${sizes[0]?.toLocaleString('en-US')}-queue arena's; ${Math.round(enqueue.perSecond).toLocaleString('en-US')}/s`);
    out(`dequeue+commit (commitAndTake), ${of}: Redis CPU per item`, `${take.us.toFixed(1)} µs`, `${(take.us / base.take).toFixed(2)}× the ${sizes[0]?.toLocaleString('en-US')}-queue arena's; ${Math.round(take.perSecond).toLocaleString('en-US')}/s`);
    out(`memory, ${of}`, `${((m1 - m0) / queues).toFixed(0)} B/queue`, `made, empty; then ${((m2 - m1) / fill).toFixed(0)} B per queued 60-byte item (${fill.toLocaleString('en-US')} items, ${(fill / queues).toFixed(1)} per queue)`);
    await q.clear(arena);
  }
}
