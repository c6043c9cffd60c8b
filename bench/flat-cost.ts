/**
 * Costs as the arena grows (BENCH_PART=flat of npm run bench:queue; with
 * BENCH_FLAT_CLUSTER=1 on a local 3-master Cluster, 12 shards, each
 * master's share shown): arenas of 10^2, 10^4 and 10^6 queues
 * (BENCH_FLAT_QUEUES to change the list), every queue holding URLs,
 * measured side by side in one run:
 *   - enqueue: BENCH_N 60-byte items, one per call, spread over every queue
 *     (64 calls in flight, merged per turn as a crawler's are): Redis CPU per item;
 *   - dequeue+commit (commitAndTake, 64 loops): Redis CPU per item;
 *   - Redis memory per queue (made, empty) and per queued item;
 *   - on one node, the floor: a bare script touching structures of the same
 *     size (FLOOR_SCRIPT).
 * The ratio to the smallest arena is the figure to read (issue: ≤ 1.2×).
 */
import type { Cluster, Redis } from 'ioredis';
import { FairQueue } from '../src/queue/index.js';
import { threeMasters, usageOf } from './cluster-cost.js';
import { commitAndTakeLoops, drive, item } from './queue-cost.js';
import { sum, usedMemoryOn } from './redis-usage.js';

type Out = (name: string, value: string, note?: string) => void;

/** Each node's Redis CPU µs per item of `total` items done by `loops` loops of `op`. */
async function cpuPerItem(ports: number[], total: number, loops: number, op: () => Promise<number>): Promise<{ us: number[]; perSecond: number }> {
  const before = await usageOf(ports);
  const { done, perSecond } = await drive(total, loops, op);
  const after = await usageOf(ports);
  return { us: after.map((a, i) => ((a.cpu - (before[i]?.cpu ?? 0)) * 1e6) / done), perSecond };
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

async function floorCost(redis: Redis, port: number, queues: number, n: number): Promise<number> {
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
  const { us } = await cpuPerItem([port], n, 64, async () => {
    const k = (i++ * 7919) % queues;
    await redis.eval(FLOOR_SCRIPT, 2, hash, zset, String(k), i);
    return 1;
  });
  await redis.del(hash, zset);
  return sum(us);
}

/** One arena of `queues` queues made, filled and measured on `ports`' nodes. */
async function arenaCosts(q: FairQueue, ports: number[], queues: number, n: number) {
  const arena = `flat${queues}`;
  await q.fixShards(arena);
  const name = (i: number): string => `site-${String(i).padStart(7, '0')}.example`;
  const m0 = await usedMemoryOn(ports);
  for (let i = 0; i < queues; i += 10_000) {
    await q.setLimits(arena, Object.fromEntries(Array.from({ length: Math.min(10_000, queues - i) }, (_, k) => [name(i + k), { rate: 'unlimited' as const }])));
  }
  const m1 = await usedMemoryOn(ports);
  // Every queue holds URLs: at least 2 each, and enough for the runs below.
  const fill = Math.max(2 * queues, 3 * n);
  for (let k = 0; k < fill; k += 2000) await Promise.all(Array.from({ length: Math.min(2000, fill - k) }, (_, j) => q.enqueue(arena, name((k + j) % queues), [item(k + j)])));
  const m2 = await usedMemoryOn(ports);
  let i = fill;
  const enqueue = await cpuPerItem(ports, n, 64, async () => q.enqueue(arena, name(i % queues), [item(i++)]));
  const loops = commitAndTakeLoops(q, arena);
  const take = await cpuPerItem(ports, n, 64, loops.op);
  await loops.finish();
  await q.clear(arena);
  return { enqueue, take, perQueue: (sum(m1) - sum(m0)) / queues, perItem: (sum(m2) - sum(m1)) / fill, fill, masters: m1.map((m, k) => m - (m0[k] ?? 0)) };
}

/** The runs, on one node (`floorOn`: its client and port) or each master of a cluster. */
async function flatRuns(q: FairQueue, ports: number[], n: number, out: Out, floorOn?: { redis: Redis; port: number }): Promise<void> {
  const sizes = (process.env.BENCH_FLAT_QUEUES ?? '100,10000,1000000').split(',').map(Number);
  const smallest = `the ${sizes[0]?.toLocaleString('en-US')}-queue arena's`;
  const base: { enqueue?: number; take?: number; floor?: number } = {};
  const each = (us: number[]): string => (us.length > 1 ? `; per master ${us.map((u) => u.toFixed(1)).join(' / ')} µs` : '');
  for (const queues of sizes) {
    const c = await arenaCosts(q, ports, queues, n);
    const of = `${queues.toLocaleString('en-US')} queues${ports.length > 1 ? `, ${ports.length} masters` : ''}`;
    if (floorOn) {
      const floor = await floorCost(floorOn.redis, floorOn.port, queues, n);
      base.floor ??= floor;
      out(`floor, ${of}: a hash field read and written, a sorted-set member moved`, `${floor.toFixed(1)} µs`, `${(floor / base.floor).toFixed(2)}× at ${sizes[0]?.toLocaleString('en-US')} (Redis's own cost of size, per script call)`);
    }
    base.enqueue ??= sum(c.enqueue.us);
    base.take ??= sum(c.take.us);
    out(`enqueue, ${of}: Redis CPU per item`, `${sum(c.enqueue.us).toFixed(1)} µs`, `${(sum(c.enqueue.us) / base.enqueue).toFixed(2)}× ${smallest}; ${Math.round(c.enqueue.perSecond).toLocaleString('en-US')}/s${each(c.enqueue.us)}`);
    out(`dequeue+commit (commitAndTake), ${of}: Redis CPU per item`, `${sum(c.take.us).toFixed(1)} µs`, `${(sum(c.take.us) / base.take).toFixed(2)}× ${smallest}; ${Math.round(c.take.perSecond).toLocaleString('en-US')}/s${each(c.take.us)}`);
    const masters = ports.length > 1 ? `; per master ${c.masters.map((m) => (m / 2 ** 20).toFixed(1)).join(' / ')} MiB for the queues` : '';
    out(`memory, ${of}`, `${c.perQueue.toFixed(0)} B/queue`, `made, empty; then ${c.perItem.toFixed(0)} B per queued 60-byte item (${c.fill.toLocaleString('en-US')} items, ${(c.fill / queues).toFixed(1)} per queue)${masters}`);
  }
}

/** On the benchmark's own redis-server. */
export async function flatCostBenchmarks(redis: Redis, q: FairQueue, n: number, out: Out): Promise<void> {
  const port = Number(redis.options.port);
  await flatRuns(q, [port], n, out, { redis, port });
}

/** On a local 3-master Cluster (BENCH_FLAT_CLUSTER=1). */
export async function flatClusterBenchmarks(n: number, out: Out): Promise<void> {
  const nodes = await threeMasters();
  const client: Redis | Cluster = nodes.client();
  const q = new FairQueue(client);
  try {
    await flatRuns(q, nodes.ports, n, out);
  } finally {
    await q.close();
    client.disconnect();
    await nodes.close();
  }
}
