/**
 * What the queue costs Redis per item, weir and the seed design's own
 * scripts side by side on one redis-server (BENCH_PART=cost of
 * npm run bench:queue): items/s with 64 calls in flight, Redis CPU (INFO
 * cpu, main thread, user + sys) and Redis commands (INFO commandstats,
 * commands inside scripts counted) per item, 60-byte items.
 *   - enqueue spread over 100 and over 10,000 queues: 64 producers, each
 *     call one item to queue i mod Q (weir merges the calls of one turn of
 *     the event loop into one script call, whatever their queues);
 *   - dequeue+commit with 1 and with 10,000 queues: 64 loops; weir both as
 *     two calls (dequeue, then commit) and as commitAndTake (one call).
 * The seed design's queues get a rate of 1,000,000/s (it has no
 * "unlimited"); weir's are unlimited. Each comparison runs BENCH_COST_ROUNDS
 * rounds (default 3), its contenders alternating, and shows the median
 * round and the median of the rounds' ratios: on two shared cores a run's
 * speed moves by a third, and contenders run one after the other saw
 * different machines. (BENCH_PART=instructions counts the same cases.)
 */
import type { Redis } from 'ioredis';
import { type FairQueue, type Lease } from '../src/queue/index.js';
import { arenaKeys } from '../src/queue/internal.js';
import { median } from './cpu.js';
import { callsBetween, redisUsage, totalCalls } from './redis-usage.js';
import { SeedDesignQueue } from './seed-design.js';
import { noopRunner } from '../test/helpers/noop.js';

type Out = (name: string, value: string, note?: string) => void;

interface Cost {
  perSecond: number;
  cpuUs: number;
  commands: number;
}

/** Runs `loops` concurrent loops of `op` (items it did) until `total` items are done; items and items/s. */
export async function drive(total: number, loops: number, op: () => Promise<number>): Promise<{ done: number; perSecond: number }> {
  const t0 = performance.now();
  let done = 0;
  await Promise.all(
    Array.from({ length: loops }, async () => {
      while (done < total) {
        // (Not `done += await op()`: that reads `done` before the await and loses the others' counts.)
        const k = await op();
        done += k;
      }
    }),
  );
  return { done, perSecond: done / ((performance.now() - t0) / 1000) };
}

/** drive(), and Redis's cost per item. */
async function measure(redis: Redis, total: number, loops: number, op: () => Promise<number>): Promise<Cost> {
  const before = await redisUsage(redis);
  const { done, perSecond } = await drive(total, loops, op);
  const after = await redisUsage(redis);
  return { perSecond, cpuUs: ((after.cpu - before.cpu) * 1e6) / done, commands: totalCalls(callsBetween(before, after)) / done };
}

/**
 * `loops` loops each committing its lease and taking the next in one call
 * (commitAndTake; the first take a dequeue): `op` for drive(), counting the
 * items committed; `finish` commits the leases still held.
 */
export function commitAndTakeLoops(q: FairQueue, arena: string, loops = 64): { op: () => Promise<number>; finish: () => Promise<void> } {
  const held = new Map<number, Lease | null>();
  let loop = 0;
  return {
    op: async () => {
      const me = loop++ % loops;
      const prev = held.get(me) ?? null;
      const next = prev ? await q.commitAndTake(prev).next : (await q.dequeue(arena)).lease;
      held.set(me, next);
      return prev ? 1 : 0;
    },
    finish: async () => {
      for (const l of held.values()) if (l) await q.commit(l);
    },
  };
}

export const item = (i: number): string => `https://example.test/some/path/${String(i).padStart(8, '0')}?q=abcdefghij`.slice(0, 60);
const row = (c: Cost): string => `${Math.round(c.perSecond).toLocaleString('en-US')}/s, ${c.cpuUs.toFixed(1)} µs, ${c.commands.toFixed(1)} cmds`;

/**
 * What one script call costs Redis when calls come one at a time, back to
 * back and then spaced out as a modest crawl sends them: an idle Redis pays
 * for waking up on each (the event loop, the system calls), which no change
 * to the scripts can save.
 */
async function wakeCost(redis: Redis, out: Out): Promise<void> {
  const keys = arenaKeys('weir', 'wake-cost');
  const runner = noopRunner(redis);
  for (const gapMs of [0, 2]) {
    const calls = gapMs === 0 ? 3000 : 1000;
    const before = await redisUsage(redis);
    for (let i = 0; i < calls; i++) {
      await runner.run('noop', keys, ['x']);
      if (gapMs) await new Promise((r) => setTimeout(r, gapMs));
    }
    const after = await redisUsage(redis);
    out(`no-op script, one in flight, ${gapMs ? `one call per ${gapMs} ms` : 'back to back'}: Redis CPU per call`, `${(((after.cpu - before.cpu) * 1e6) / calls).toFixed(1)} µs`, gapMs ? 'Redis sleeps between calls and wakes for each' : '');
  }
}

/**
 * The enqueue-spread case over `queues` queues: its two arenas (weir's
 * queues unlimited, the seed design's at 1,000,000/s: it has no
 * "unlimited") and an op each for drive(), enqueuing one item a call to the
 * next queue in turn. (BENCH_PART=instructions counts the same.)
 */
export async function spreadEnqueues(q: FairQueue, seed: SeedDesignQueue, queues: number): Promise<{ weir: () => Promise<number>; seed: () => Promise<number> }> {
  const names = Array.from({ length: queues }, (_, i) => `q${i}`);
  await q.setLimits(`spread${queues}`, Object.fromEntries(names.map((k) => [k, { rate: 'unlimited' as const }])));
  await seed.defineRateLimits(`seedspread${queues}`, Object.fromEntries(names.map((k) => [k, 1_000_000])));
  let i = 0;
  let j = 0;
  return {
    weir: async () => q.enqueue(`spread${queues}`, `q${i % queues}`, [item(i++)]),
    seed: async () => (await seed.enqueue(`seedspread${queues}`, `q${j % queues}`, item(j++)), 1),
  };
}

/** Rounds of each comparison (BENCH_COST_ROUNDS, default 3): the contenders alternate round by round, on two noisy cores where a run's speed moves by a third. */
const ROUNDS = Math.max(1, Number(process.env.BENCH_COST_ROUNDS ?? 3));

/** The round whose items/s is the median, and every round's items/s. */
function medianRun(runs: Cost[]): Cost & { all: string } {
  const sorted = [...runs].sort((a, b) => a.perSecond - b.perSecond);
  return { ...(sorted[Math.floor(sorted.length / 2)] as Cost), all: runs.map((c) => Math.round(c.perSecond).toLocaleString('en-US')).join(', ') };
}

/** The median of the rounds' ratios a[k] / b[k] of items/s, and each round's. */
function ratioOfRounds(a: Cost[], b: Cost[]): { median: number; all: string } {
  const ratios = a.map((c, k) => c.perSecond / ((b[k] as Cost).perSecond || 1));
  return { median: median(ratios), all: ratios.map((r) => r.toFixed(2)).join(', ') };
}

export async function queueCostBenchmarks(redis: Redis, q: FairQueue, n: number, out: Out): Promise<void> {
  await wakeCost(redis, out);
  const seed = new SeedDesignQueue(redis.duplicate());
  const rounds = ROUNDS > 1 ? `${ROUNDS} alternated rounds` : 'one round';
  for (const queues of [100, 10_000]) {
    const ops = await spreadEnqueues(q, seed, queues);
    const weirRuns: Cost[] = [];
    const seedRuns: Cost[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      weirRuns.push(await measure(redis, n, 64, ops.weir));
      seedRuns.push(await measure(redis, n, 64, ops.seed));
    }
    const [weir, theirs, ratio] = [medianRun(weirRuns), medianRun(seedRuns), ratioOfRounds(weirRuns, seedRuns)];
    out(`enqueue spread over ${queues.toLocaleString('en-US')} queues: weir`, row(weir), `${ratio.median.toFixed(2)}× the seed design's items/s, the median of ${rounds} (${ratio.all}; target ≥ 1.0); Redis CPU per item target ≤ 5 µs`);
    out(`enqueue spread over ${queues.toLocaleString('en-US')} queues: seed design`, row(theirs), `one call per item, as written; items/s by round ${theirs.all}`);
  }
  // Items for every round's two weir runs: one queue as deep as all of them, the spread arena topped up past them.
  const need = 2 * ROUNDS * n;
  await q.setLimits('one', { q0: { rate: 'unlimited' } });
  for (let k = 0; k < need + n; k += 1000) await q.enqueue('one', 'q0', Array.from({ length: 1000 }, (_, m) => item(k + m)));
  for (let k = 0; k < need; k += 1000) await Promise.all(Array.from({ length: 1000 }, (_, m) => q.enqueue('spread10000', `q${(k + m) % 10_000}`, [item(k + m)])));
  const one = { queues: 1, arena: 'one', twoCalls: [] as Cost[], oneCall: [] as Cost[] };
  const many = { queues: 10_000, arena: 'spread10000', twoCalls: [] as Cost[], oneCall: [] as Cost[] };
  for (let r = 0; r < ROUNDS; r++) {
    for (const c of [one, many]) {
      c.twoCalls.push(
        await measure(redis, n, 64, async () => {
          const d = await q.dequeue(c.arena);
          if (!d.lease) return 0;
          await q.commit(d.lease);
          return 1;
        }),
      );
      const loops = commitAndTakeLoops(q, c.arena);
      c.oneCall.push(await measure(redis, n, 64, loops.op));
      await loops.finish();
    }
  }
  for (const c of [one, many]) {
    const label = `dequeue+commit, ${c.queues.toLocaleString('en-US')} queue(s): weir`;
    const oneCall = medianRun(c.oneCall);
    out(`${label}, two calls`, row(medianRun(c.twoCalls)), 'dequeue, then commit');
    out(`${label}, commitAndTake`, row(oneCall), `one call per item; Redis CPU per item target ≤ 12 µs; items/s by round ${oneCall.all}`);
  }
  // The seed design's dequeue+commit, on the spread arena it filled (10,000 queues) and on one queue.
  await seed.defineRateLimits('seedone', { q0: 1_000_000 });
  for (let k = 0; k < n + 64; k++) await seed.enqueue('seedone', 'q0', item(k));
  for (const [label, arena] of [['1 queue', 'seedone'], ['10,000 queues', 'seedspread10000']] as const) {
    const theirs = await measure(redis, Math.min(n, 40_000), 64, async () => {
      const r = await seed.dequeue(arena);
      if (!r) return 0;
      await seed.commit(r.txnid);
      return 1;
    });
    out(`dequeue+commit, ${label}: seed design`, row(theirs), 'its scripts as written');
  }
  const ratio = ratioOfRounds(many.oneCall, one.oneCall);
  out('commitAndTake: 10,000 queues vs 1 queue', ratio.median.toFixed(2), `the median of ${rounds}, each its two runs side by side (${ratio.all}); target ≥ 0.9`);
}
