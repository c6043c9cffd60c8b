/**
 * One arena on a local 3-master Redis Cluster against the same on one
 * redis-server, side by side in one run: Redis CPU (INFO cpu, main thread,
 * user + sys) and commands (INFO commandstats, inside scripts counted) per
 * item or page, for each master and in total. On this machine the masters
 * share two cores with everything else, so the figures that carry over to
 * real hardware are the CPU per item or page and each master's share of
 * it, not wall-clock speed-up.
 *   - queue (BENCH_PART=cluster of npm run bench:queue): enqueue spread
 *     over 10,000 queues and dequeue+commit (commitAndTake), 64 in flight;
 *   - crawl (BENCH_PART=cluster of npm run bench:crawl): `weir crawl
 *     --workers 2` of the 100-domain synthetic web (bench/web.ts), pointed at
 *     one node of the cluster.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Cluster, Redis } from 'ioredis';
import { FairQueue, type Lease } from '../src/queue/index.js';
import { startCluster, startRedis } from '../test/helpers/redis.js';
import { drive, item } from './queue-cost.js';
import { callsBetween, onEachNode, redisUsage, sum, totalCalls, type RedisUsage } from './redis-usage.js';
import { crawlQuietly, isPageServed, manyDomainSeed, startManyDomainWeb } from './web.js';

type Out = (name: string, value: string, note?: string) => void;

/** Redis nodes whose use is measured: one, or each master of a cluster. */
export interface Nodes {
  label: string;
  url: string;
  ports: number[];
  client: () => Redis | Cluster;
  close: () => Promise<void>;
}

export async function oneNode(): Promise<Nodes> {
  const server = await startRedis();
  return { label: 'one node', url: server.url, ports: [server.port], client: () => server.client(), close: () => server.destroy() };
}

export async function threeMasters(): Promise<Nodes> {
  const cluster = await startCluster();
  return { label: '3-master cluster', url: `redis://127.0.0.1:${cluster.ports[0]}`, ports: await cluster.masterPorts(), client: () => cluster.client(), close: () => cluster.destroy() };
}

/** What each node (a cluster's masters) has spent so far, by port. */
export const usageOf = (ports: number[]): Promise<RedisUsage[]> => onEachNode(ports, redisUsage);

/** Each master's CPU µs and commands per unit between two readings; and the totals. */
function perUnit(before: RedisUsage[], after: RedisUsage[], units: number): { cpu: number[]; commands: number[] } {
  return {
    cpu: after.map((a, i) => ((a.cpu - (before[i]?.cpu ?? 0)) * 1e6) / units),
    commands: after.map((a, i) => totalCalls(callsBetween(before[i] as RedisUsage, a)) / units),
  };
}


function report(out: Out, what: string, nodes: Nodes, unit: string, r: { cpu: number[]; commands: number[] }, rate?: number): void {
  const each = r.cpu.length > 1 ? `; per master ${r.cpu.map((c) => c.toFixed(1)).join(' / ')} µs, ${r.commands.map((c) => c.toFixed(1)).join(' / ')} cmds` : '';
  out(`${what}, ${nodes.label}: Redis CPU per ${unit}`, `${sum(r.cpu).toFixed(1)} µs`, `${sum(r.commands).toFixed(1)} commands${rate ? `, ${Math.round(rate).toLocaleString('en-US')}/s` : ''}${each}`);
}


export async function clusterQueueBenchmarks(out: Out, n: number): Promise<void> {
  for (const make of [oneNode, threeMasters]) {
    const nodes = await make();
    const client = nodes.client();
    const q = new FairQueue(client);
    try {
      const layout = await q.fixShards('spread');
      const names = Array.from({ length: 10_000 }, (_, i) => `q${i}`);
      await q.setLimits('spread', Object.fromEntries(names.map((k) => [k, { rate: 'unlimited' as const }])));
      let i = 0;
      let before = await usageOf(nodes.ports);
      const enq = (await drive(n, 64, async () => q.enqueue('spread', `q${i % 10_000}`, [item(i++)]))).perSecond;
      report(out, `enqueue spread over 10,000 queues (${layout.shards} shard${layout.shards === 1 ? '' : 's'})`, nodes, 'item', perUnit(before, await usageOf(nodes.ports), n), enq);
      // As many again, so that dequeue+commit never drains a queue.
      for (let k = 0; k < n; k += 1000) await Promise.all(Array.from({ length: 1000 }, () => q.enqueue('spread', `q${i % 10_000}`, [item(i++)])));
      const counted = { ...q.counters };
      const held = new Map<number, Lease | null>();
      let loop = 0;
      before = await usageOf(nodes.ports);
      const { perSecond: deq } = await drive(n - 64, 64, async () => {
        const me = loop++ % 64;
        const prev = held.get(me) ?? null;
        const next = prev ? await q.commitAndTake(prev).next : await q.take('spread');
        held.set(me, next);
        return prev ? 1 : 0;
      });
      report(out, `dequeue+commit (commitAndTake), 10,000 queues (${layout.shards} shard${layout.shards === 1 ? '' : 's'})`, nodes, 'item', perUnit(before, await usageOf(nodes.ports), n - 64), deq);
      out(`  its dequeue calls per item, empty ones per item`, `${((q.counters.dequeues - counted.dequeues) / n).toFixed(2)}, ${((q.counters.emptyDequeues - counted.emptyDequeues) / n).toFixed(3)}`, `${q.counters.wakeups - counted.wakeups} wake-ups`);
      for (const l of held.values()) if (l) await q.commit(l);
    } finally {
      await q.close();
      client.disconnect();
      await nodes.close();
    }
  }
}

export async function clusterCrawlBenchmarks(out: Out, dir: string): Promise<void> {
  for (const make of [oneNode, threeMasters]) {
    const nodes = await make();
    const web = await startManyDomainWeb();
    try {
      const seed = manyDomainSeed(web, 'unlimited');
      const seedPath = join(dir, 'cluster-cost.yaml');
      await writeFile(seedPath, seed);
      const before = await usageOf(nodes.ports);
      const t0 = performance.now();
      const code = await crawlQuietly(seedPath, 64, join(dir, 'cluster-cost.jsonl'), nodes.url);
      if (code !== 0) throw new Error(`weir crawl exited ${code}`);
      const seconds = (performance.now() - t0) / 1000;
      const pages = web.log.filter(isPageServed).length;
      report(out, `100 domains, unlimited (${pages} pages, ${seconds.toFixed(1)} s)`, nodes, 'page', perUnit(before, await usageOf(nodes.ports), pages));
    } finally {
      await web.close();
      await nodes.close();
    }
  }
}
