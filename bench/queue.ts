/**
 * npm run bench:queue — the queue's benchmark, side by side in one run on one
 * private redis-server (started here, on loopback):
 *   - the raw ceiling: the no-op script, called exactly like the real ones;
 *   - enqueue in batches and one item per call with 64 calls in flight;
 *   - dequeue+commit with 1, 100 and 10,000 queues, 64 in flight;
 *   - Redis memory per queued ~60-byte item, and what 2,000 queues read and
 *     refilled in turn grow by;
 *   - BullMQ adding (addBulk) and processing (Worker, concurrency 64,
 *     removeOnComplete) the same number of no-op jobs on the same server;
 *   - the rate run: 100 queues at 50/s, 4 workers, 10 s, deep backlogs and
 *     queues of about one item refilled after every commit.
 *   - Redis CPU and commands per item, enqueue spread over 100 and 10,000
 *     queues and dequeue+commit, beside the seed design (bench/queue-cost.ts).
 * Options (env): BENCH_N (items per throughput run, default 50000; per round of the cost part, BENCH_COST_ROUNDS rounds, default 3),
 *   - one arena on a 3-master Redis Cluster beside one node: Redis CPU per
 *     item per master (bench/cluster-cost.ts).
 *   - instructions per call (a redis-server under valgrind's callgrind), one
 *     call at a time, beside the seed design (bench/queue-instructions.ts).
 * BENCH_RATE_SECONDS (default 10), BENCH_PART=rate, throughput, cost, cluster, instructions, revisit or flat (one part; flat: bench/flat-cost.ts, 10^2, 10^4 and 10^6 queues; revisit: bench/revisit-memory.ts; instructions: bench/queue-instructions.ts, under valgrind, BENCH_CALLS calls per case, default 1,000).
 */
import { setMaxListeners } from 'node:events';
import { Queue as BullQueue, Worker as BullWorker } from 'bullmq';
import { Redis } from 'ioredis';
import { usedMemory } from './redis-usage.js';
import { FairQueue, type Lease } from '../src/queue/index.js';
import { arenaKeys } from '../src/queue/internal.js';
import { sleepUntil } from '../src/sleep.js';
import { SeedDesignQueue } from './seed-design.js';
import { clusterQueueBenchmarks } from './cluster-cost.js';
import { queueCostBenchmarks } from './queue-cost.js';
import { flatClusterBenchmarks, flatCostBenchmarks } from './flat-cost.js';
import { queueInstructionBenchmarks } from './queue-instructions.js';
import { revisitMemoryBenchmarks } from './revisit-memory.js';
import { startRedis } from '../test/helpers/redis.js';
import { noopRunner } from '../test/helpers/noop.js';

const N = Number(process.env.BENCH_N ?? 50_000);
const RATE_SECONDS = Number(process.env.BENCH_RATE_SECONDS ?? 10);
const CONCURRENCY = 64;
const ITEM = (i: number): string => `https://example.test/some/path/${String(i).padStart(8, '0')}?q=abcdefghij`.slice(0, 60);

const server = await startRedis();
const redis = new Redis({ port: server.port, host: '127.0.0.1' });
const q = new FairQueue(redis);
const rows: [string, string, string][] = [];
const out = (name: string, value: string, note = ''): void => {
  rows.push([name, value, note]);
  console.log(`${name.padEnd(52)} ${value.padStart(14)}  ${note}`);
};
const fmt = (n: number): string => (n >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(2));

async function timed(fn: () => Promise<void>): Promise<number> {
  const t = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t) / 1e9;
}

async function inFlight(total: number, concurrency: number, op: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        const i = next++;
        await op(i);
      }
    }),
  );
}

console.log(`weir queue benchmark — redis-server ${(await redis.info('server')).match(/redis_version:(\S+)/)?.[1]}, N=${N}, node ${process.version}`);

// BENCH_PART=rate runs only the rate run (section 6), throughput only sections 1-5, cost only section 7.
const PART = process.env.BENCH_PART ?? 'all';
if (PART !== 'rate' && PART !== 'cost' && PART !== 'cluster' && PART !== 'instructions' && PART !== 'revisit' && PART !== 'flat') {
// 1. Raw ceiling.
const ceilArena = 'ceiling';
const noop = noopRunner(redis);
const ceilKeys = arenaKeys('weir', ceilArena);
let s = await timed(() => inFlight(N, CONCURRENCY, () => noop.run('noop', ceilKeys, ['token-token-token', 60000, '0'])));
const ceiling = N / s;
out('no-op script, 64 in flight (calls/s)', fmt(ceiling), 'the ceiling: same 13 keys, same client');
s = await timed(() => inFlight(N / 5, 1, () => noop.run('noop', ceilKeys, ['token-token-token', 60000, '0'])));
const ceiling1 = N / 5 / s;
out('no-op script, 1 in flight (calls/s)', fmt(ceiling1), 'one round trip at a time');

// 2. Enqueue.
await q.setLimits('enq', { a: { rate: 'unlimited' } });
s = await timed(async () => {
  for (let i = 0; i < N; i += 1000) await q.enqueue('enq', 'a', Array.from({ length: 1000 }, (_, j) => ITEM(i + j)));
});
out('enqueue, batches of 1,000 (items/s)', fmt(N / s), `${(N / s / ceiling1).toFixed(1)}× the 1-in-flight ceiling in calls`);
s = await timed(async () => {
  for (let i = 0; i < N; i += 100) await q.enqueue('enq', 'a', Array.from({ length: 100 }, (_, j) => ITEM(i + j)));
});
out('enqueue, batches of 100 (items/s)', fmt(N / s), '');
s = await timed(() => inFlight(N, CONCURRENCY, (i) => q.enqueue('enq', 'a', [ITEM(i)])));
out('enqueue, 1 item per call, 64 in flight (items/s)', fmt(N / s), `${((N / s / ceiling) * 100).toFixed(0)}% of the ceiling`);
await q.destroy('enq');

// 3. Memory per queued item.
{
  await q.setLimits('mem', { a: { rate: 'unlimited' } });
  await q.enqueue('mem', 'a', [ITEM(0)]);
  const before = await usedMemory(redis);
  const M = 200_000;
  for (let i = 0; i < M; i += 1000) await q.enqueue('mem', 'a', Array.from({ length: 1000 }, (_, j) => ITEM(i + j + 1)));
  const per = ((await usedMemory(redis)) - before) / M;
  out('Redis memory per queued 60-byte item (bytes)', per.toFixed(1), `used_memory delta over ${M.toLocaleString('en-US')} items`);
  await q.destroy('mem');
}
// What a crawl's queues hold once read and refilled in turn: 2,000 queues of
// 3 items each, 12 rounds of one taken, committed and one enqueued a queue;
// used_memory's growth over the rounds ÷ the items queued (items long served
// kept in a queue's open chunk would show here: lua/includes/items.lua).
{
  const names = Array.from({ length: 2000 }, (_, i) => `site${i}.example`);
  await q.setLimits('churn', Object.fromEntries(names.map((n) => [n, { rate: 'unlimited' as const }])));
  let made = 0;
  for (let k = 0; k < 3; k++) await q.enqueueAll('churn', names.map((n) => ({ queue: n, items: [ITEM(made++)] })));
  const before = await usedMemory(redis);
  for (let round = 0; round < 12; round++) {
    const leases = await Promise.all(names.map(async () => (await q.dequeue('churn')).lease));
    const taken = leases.filter((l): l is Lease => l !== null && l !== undefined);
    await Promise.all(taken.map((l) => q.commit(l)));
    await q.enqueueAll('churn', taken.map((l) => ({ queue: l.queue, items: [ITEM(made++)] })));
  }
  const queued = (await q.stats('churn')).queued;
  out('Redis memory growth per queued item, 2,000 queues read and refilled 12 times (bytes)', (((await usedMemory(redis)) - before) / queued).toFixed(1), `${queued.toLocaleString('en-US')} queued; 0 would be none`);
  await q.destroy('churn');
}

// 4. Dequeue+commit with 1, 100, 10,000 queues.
const dqRates: Record<number, number> = {};
for (const queues of [1, 100, 10_000]) {
  const arena = `dq${queues}`;
  const limits: Record<string, { rate: 'unlimited' }> = {};
  for (let i = 0; i < queues; i++) limits[`q${i}`] = { rate: 'unlimited' };
  await q.setLimits(arena, limits);
  const SINGLE = 5000;
  const per = Math.ceil((N + SINGLE) / queues);
  await inFlight(queues, 16, (i) => q.enqueue(arena, `q${i}`, Array.from({ length: per }, (_, j) => ITEM(j))));
  let done = 0;
  s = await timed(() =>
    inFlight(N, CONCURRENCY, async () => {
      const r = await q.dequeue(arena);
      if (r.lease) {
        await q.commit(r.lease);
        done++;
      }
    }),
  );
  dqRates[queues] = done / s;
  out(`dequeue+commit, ${queues.toLocaleString('en-US')} queue(s), 64 in flight (items/s)`, fmt(done / s), `${((done / s / (ceiling / 2)) * 100).toFixed(0)}% of the 2-call ceiling`);
  // The same with one call at a time: no batching, so per-queue costs show undiluted.
  let done1 = 0;
  const s1 = await timed(() =>
    inFlight(SINGLE, 1, async () => {
      const r = await q.dequeue(arena);
      if (r.lease) {
        await q.commit(r.lease);
        done1++;
      }
    }),
  );
  dqRates[-queues] = done1 / s1;
  out(`dequeue+commit, ${queues.toLocaleString('en-US')} queue(s), 1 in flight (items/s)`, fmt(done1 / s1), `${((done1 / s1 / (ceiling1 / 2)) * 100).toFixed(0)}% of the 1-in-flight 2-call ceiling`);
  await q.destroy(arena);
}
out('10,000 queues vs 1 queue, 64 in flight', ((dqRates[10_000] ?? 0) / (dqRates[1] ?? 1)).toFixed(2), 'target ≥ 0.8');
out('10,000 queues vs 1 queue, 1 in flight', ((dqRates[-10_000] ?? 0) / (dqRates[-1] ?? 1)).toFixed(2), '');

// 5. BullMQ on the same server.
let bullAdd = 0;
let bullProcess = 0;
{
  const connection = { host: '127.0.0.1', port: server.port, maxRetriesPerRequest: null };
  const bq = new BullQueue('bench', { connection });
  s = await timed(async () => {
    for (let i = 0; i < N; i += 1000) {
      await bq.addBulk(Array.from({ length: 1000 }, (_, j) => ({ name: 'j', data: { u: ITEM(i + j) }, opts: { removeOnComplete: true } })));
    }
  });
  bullAdd = N / s;
  out('BullMQ addBulk, batches of 1,000 (jobs/s)', fmt(bullAdd), '');
  let completed = 0;
  let finish!: () => void;
  const finished = new Promise<void>((r) => (finish = r));
  const t0 = process.hrtime.bigint();
  const worker = new BullWorker('bench', async () => {}, { connection, concurrency: CONCURRENCY });
  worker.on('completed', () => {
    completed++;
    if (completed === N) finish();
  });
  await finished;
  bullProcess = N / (Number(process.hrtime.bigint() - t0) / 1e9);
  out('BullMQ Worker, concurrency 64, no-op (jobs/s)', fmt(bullProcess), '');
  await worker.close();
  await bq.obliterate({ force: true });
  await bq.close();
}
out('weir dequeue+commit (1 queue) / BullMQ processing', ((dqRates[1] ?? 0) / bullProcess).toFixed(2), 'target ≥ 2');
out('weir enqueue batches / BullMQ addBulk', (N / (await timed(async () => {
  await q.setLimits('enq2', { a: { rate: 'unlimited' } });
  for (let i = 0; i < N; i += 1000) await q.enqueue('enq2', 'a', Array.from({ length: 1000 }, (_, j) => ITEM(i + j)));
})) / bullAdd).toFixed(2), 'same batch size, measured again here');
await q.destroy('enq2');

}

// 6. The rate run: 100 queues at 50/s; 4 clients (each its own connection)
// in one process, each with 16 concurrent take loops, every lease committed
// at once; deep backlogs, and queues of about one item refilled after every
// commit. weir plainly (take), weir with `aheadMs` (the lease comes before
// its slot and the loop acts at the slot, as the crawler's pacer does), and
// the seed design's scripts busy-polling as written, side by side.
type Contender = 'weir' | 'weir ahead' | 'seed design';
const RATE_QUEUES = 100;
const RATE = 50;
const CLIENTS = 4;
const LOOPS = 16;

async function rateRun(who: Contender, mode: 'deep' | 'refill'): Promise<void> {
  const arena = `rate-${who.replace(' ', '-')}-${mode}`;
  const names = Array.from({ length: RATE_QUEUES }, (_, i) => `r${String(i).padStart(3, '0')}`);
  const initial = mode === 'deep' ? RATE * RATE_SECONDS * 2 : 1;
  const served = new Map<string, number[]>(names.map((n) => [n, []]));
  const acted = new Map<string, number[]>(names.map((n) => [n, []]));
  const clients = Array.from({ length: CLIENTS }, () => new Redis({ port: server.port, host: '127.0.0.1' }));
  const ac = new AbortController();
  setMaxListeners(0, ac.signal); // 64 take loops wait on it
  let stop: NodeJS.Timeout | undefined;
  /** The clock starts once the backlog is in. */
  const start = (): void => void (stop = setTimeout(() => ac.abort(), RATE_SECONDS * 1000));
  let empty = 0;
  let leases = 0;
  if (who === 'seed design') {
    const seed = new SeedDesignQueue(redis);
    await seed.defineRateLimits(arena, Object.fromEntries(names.map((n) => [n, RATE])));
    for (const n of names) await Promise.all(Array.from({ length: initial }, (_, j) => seed.enqueue(arena, n, ITEM(j))));
    const sq = clients.map((c) => new SeedDesignQueue(c));
    start();
    await Promise.all(
      sq.flatMap((c) =>
        Array.from({ length: LOOPS }, async () => {
          while (!ac.signal.aborted) {
            const r = await c.dequeue(arena);
            if (!r) {
              empty++;
              await new Promise((res) => setImmediate(res));
              continue;
            }
            leases++;
            const q = /:([^:]+)$/.exec(await redis.hget(`txn:${r.txnid}`, 'queue_name') ?? '')?.[1] ?? '';
            served.get(q)?.push(r.at * 1000);
            acted.get(q)?.push(r.at * 1000);
            await c.commit(r.txnid);
            if (mode === 'refill') await c.enqueue(arena, q, r.item);
          }
        }),
      ),
    );
  } else {
    const limits: Record<string, { rate: number }> = Object.fromEntries(names.map((n) => [n, { rate: RATE }]));
    await q.setLimits(arena, limits);
    for (const n of names) await q.enqueue(arena, n, Array.from({ length: initial }, (_, j) => ITEM(j)));
    const fq = clients.map((c) => new FairQueue(c));
    start();
    const aheadMs = who === 'weir ahead' ? Number(process.env.BENCH_AHEAD_MS ?? 20) : 0;
    await Promise.all(
      fq.flatMap((w) =>
        Array.from({ length: LOOPS }, async () => {
          let l: Lease | null = await w.take(arena, { signal: ac.signal, aheadMs });
          while (l) {
            // Act at the slot, not before (the lease may come up to aheadMs early).
            if (l.localServedAt > performance.now()) await sleepUntil(l.localServedAt);
            served.get(l.queue)?.push(Math.round(l.servedAt * 1000));
            acted.get(l.queue)?.push(Math.round(w.clock.toRedis(performance.now()) * 1000));
            // Done: commit and take the next in one call, as the crawler's lanes do.
            const { committed, next } = w.commitAndTake(l, { signal: ac.signal, aheadMs });
            const { queue, item } = l;
            const refill = mode === 'refill' ? committed.then(() => w.enqueue(arena, queue, [item])) : null;
            l = await next;
            // (Awaited here, not left floating: a failed refill fails the run.)
            await refill;
          }
        }),
      ),
    );
    empty = fq.reduce((a, w) => a + w.counters.emptyDequeues, 0);
    leases = fq.reduce((a, w) => a + w.counters.leases, 0);
    for (const w of fq) await w.close();
    await q.destroy(arena);
  }
  clearTimeout(stop);
  for (const c of clients) c.disconnect();
  const rates: number[] = [];
  let minGap = Infinity;
  let minActed = Infinity;
  for (const n of names) {
    const times = (served.get(n) ?? []).sort((a, b) => a - b);
    for (let i = 1; i < times.length; i++) minGap = Math.min(minGap, (times[i] as number) - (times[i - 1] as number));
    const at = (acted.get(n) ?? []).sort((a, b) => a - b);
    for (let i = 1; i < at.length; i++) minActed = Math.min(minActed, (at[i] as number) - (at[i - 1] as number));
    // Served per second over the whole run: what a queue got of its limit.
    rates.push(times.length / RATE_SECONDS);
  }
  rates.sort((a, b) => a - b);
  const label = `rate run, ${who}, ${mode}`;
  out(`${label}: served per queue min/median/max (/s)`, `${(rates[0] ?? 0).toFixed(1)}/${(rates[50] ?? 0).toFixed(1)}/${(rates.at(-1) ?? 0).toFixed(1)}`, `limit ${RATE}/s; min ${(((rates[0] ?? 0) / RATE) * 100).toFixed(1)}% of it (target ≥ 97%)`);
  out(`${label}: smallest gap in one queue, served / acted (ms)`, `${(minGap / 1000).toFixed(2)} / ${(minActed / 1000).toFixed(2)}`, `limit ${(1000 / RATE).toFixed(2)} ms`);
  out(`${label}: empty dequeues per lease`, (empty / Math.max(1, leases)).toFixed(3), 'target ≤ 0.1');
}
for (const who of PART === 'throughput' || PART === 'cost' || PART === 'cluster' || PART === 'instructions' || PART === 'revisit' || PART === 'flat' ? [] : (['weir', 'weir ahead', 'seed design'] as const)) {
  for (const mode of ['deep', 'refill'] as const) await rateRun(who, mode);
}
// 7. Redis cost per item, beside the seed design (bench/queue-cost.ts).
if (PART === 'all' || PART === 'cost') await queueCostBenchmarks(redis, q, N, out);
// 8. One arena on a 3-master cluster beside one node (bench/cluster-cost.ts).
if (PART === 'all' || PART === 'cluster') await clusterQueueBenchmarks(out, N);
// 9. Instructions per call under callgrind, beside the seed design (bench/queue-instructions.ts).
if (PART === 'all' || PART === 'instructions') await queueInstructionBenchmarks(out);
// 11. Costs as the arena grows to 10^6 queues (bench/flat-cost.ts): only when asked, it takes minutes.
if (PART === 'flat') await (process.env.BENCH_FLAT_CLUSTER ? flatClusterBenchmarks(N, out) : flatCostBenchmarks(redis, q, N, out));
// 10. What a URL kept for revisits costs Redis (bench/revisit-memory.ts).
if (PART === 'all' || PART === 'revisit') await revisitMemoryBenchmarks(redis, q, out);

console.log('\n| measure | value | note |\n| --- | ---: | --- |');
for (const [a, b, c] of rows) console.log(`| ${a} | ${b} | ${c} |`);

await q.close();
redis.disconnect();
await server.destroy();
process.exit(0);
