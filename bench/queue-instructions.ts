/**
 * What a queue call costs Redis in CPU instructions (BENCH_PART=instructions
 * of npm run bench:queue): a redis-server run under valgrind's callgrind,
 * counting only while the measured calls run (`callgrind_control -i on/off`,
 * one dump per case). Unlike CPU time on two shared, noisy cores, an
 * instruction count is the same run after run whatever else the machine is
 * doing, so small changes to the scripts show. Calls go one at a time, as a
 * worker lane sends them: each pays its whole call, nothing batched.
 *   - weir commitAndTake on one deep queue, and over 10,000 queues;
 *   - weir enqueue of one 60-byte URL per call, to a different queue each
 *     (10,000 queues);
 *   - weir enqueue of a page's links as the crawler sends them: 50 URLs to
 *     one queue of 100, each with 14 dedupe bit positions in one 512-bit
 *     block (the crawler's blocked Bloom filter at 10⁻⁶), per URL; and the
 *     same links again, all seen by then;
 *   - the seed design's dequeue+commit (10,000 queues) and enqueue, its
 *     scripts as written;
 *   - a no-op script call (weir's 13 keys): the floor any call pays;
 *   - and with 64 in flight, as BENCH_PART=cost runs them (its items/s
 *     ratios, counted here without the noise of two shared cores): 64
 *     loops of commitAndTake on one deep queue and over 10,000 queues
 *     (weir merges a turn's calls into one script call), and 64 producers
 *     of one-item enqueues over 100 and 10,000 queues beside the seed
 *     design's enqueue (one call an item, 64 in flight).
 * Needs valgrind (Debian: apt-get install valgrind); skipped without it.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { FairQueue, type Lease } from '../src/queue/index.js';
import { arenaKeys } from '../src/queue/internal.js';
import { freePort } from '../test/helpers/redis.js';
import { commitAndTakeLoops, drive, item, spreadEnqueues } from './queue-cost.js';
import { SeedDesignQueue } from './seed-design.js';
import { noopRunner } from '../test/helpers/noop.js';

type Out = (name: string, value: string, note?: string) => void;

/**
 * The redis-server counted: BENCH_REDIS_SERVER, else the one on PATH. A
 * build with symbols (Redis's own source, `make OPTIMIZATION="-O2 -g"`)
 * lets `callgrind_annotate` name the functions of Lua and of Redis in the
 * dumps that BENCH_KEEP=1 keeps (docs/benchmarks.md, "Where a call's
 * instructions go"); Debian's binary is stripped.
 */
const REDIS_SERVER = process.env.BENCH_REDIS_SERVER ?? 'redis-server';

export const has = (cmd: string): boolean => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;

/** A redis-server under callgrind, instrumentation off until `count` runs. */
export async function startCounted(dir: string): Promise<{ redis: Redis; count(fn: () => Promise<void>): Promise<number>; stop(): Promise<void> }> {
  const port = await freePort();
  const out = join(dir, 'cg.out');
  const proc = spawn('valgrind', ['--tool=callgrind', '--instr-atstart=no', `--callgrind-out-file=${out}`, REDIS_SERVER, '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  // (Valgrind takes a few seconds to start it.)
  for (let i = 0; spawnSync('redis-cli', ['-p', String(port), 'ping'], { encoding: 'utf8' }).stdout.trim() !== 'PONG'; i++) {
    if (i > 150) {
      proc.kill('SIGKILL');
      throw new Error('redis-server under valgrind did not start');
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  const redis = new Redis({ port, host: '127.0.0.1' });
  const control = (...args: string[]): void => {
    const r = spawnSync('callgrind_control', [...args, String(proc.pid)], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`callgrind_control ${args.join(' ')}: ${r.stderr}`);
  };
  let dumps = 0;
  return {
    redis,
    async count(fn) {
      control('-i', 'on');
      await fn();
      control('-d');
      control('-i', 'off');
      dumps += 1;
      // Dumps are numbered in order; the newest holds this case's counts alone.
      const file = readdirSync(dir)
        .filter((f) => f.startsWith('cg.out.'))
        .map((f) => join(dir, f))
        .sort((a, b) => Number(a.split('.').pop()) - Number(b.split('.').pop()))
        .at(-1);
      const text = file ? readFileSync(file, 'utf8') : '';
      // (`totals`, the sum of what the dump lists: its `summary` line can wrap below zero after `-i off`.)
      const total = /^totals: (\d+)/m.exec(text)?.[1];
      if (!total || !dumps) throw new Error('no callgrind dump');
      return Number(total);
    },
    async stop() {
      redis.disconnect();
      proc.kill('SIGKILL');
      await new Promise((r) => proc.once('exit', r));
    },
  };
}

/**
 * A kickoff over domains no list names: a new queue for each URL, made by
 * its enqueue ('create'), 14 dedupe positions in one block each, as many
 * queues a call as the kickoff sends (250: LIMITS.maxPerCall's share), in
 * block form as the kickoff sends them and as positions; beside
 * the seed design doing its least for the same (define_rate_limits, then its
 * enqueue script, per new queue). Each into an arena that already holds
 * BENCH_KICKOFF_ARENA queues (default 20,000), made before counting starts,
 * as a kickoff of 10⁶ domains meets after its first batches: an empty
 * arena's first 512 names sit in a listpack (Redis's hash-max-listpack-entries
 * here), which every lookup scans, and a count from empty paid for that
 * (over a quarter more per URL for a kickoff of 1,000).
 */
async function kickoffCase(server: Awaited<ReturnType<typeof startCounted>>, q: FairQueue, seed: SeedDesignQueue, out: Out, n: number): Promise<void> {
  const bits = 512 * 20_000;
  const perCall = 250;
  const total = Math.max(perCall, Math.round(n / perCall) * perCall);
  const name = (i: number): string => `site-${String(i).padStart(7, '0')}.example`;
  // (Fixed positions, as above: one block each, the same every run.)
  const positions = (i: number): number[] => Array.from({ length: 14 }, (_, h) => ((i * 7919) % (bits / 512)) * 512 + ((i * 31 + h * 37) % 512));
  // As the crawler sends them (dedupeBlocks: start URLs and links), and as positions for BITFIELD, each into an arena of its own.
  const held = Math.ceil(Number(process.env.BENCH_KICKOFF_ARENA ?? 20_000) / perCall) * perCall;
  const cost: Record<string, number> = {};
  for (const blocks of [true, false]) {
    const arena = blocks ? 'fresh' : 'freshpos';
    await q.configureDedupe(arena, { bits, hashes: 14 });
    const batch = (at: number): Promise<unknown> =>
      q.enqueueAll(
        arena,
        Array.from({ length: perCall }, (_, k) => ({ queue: name(at + k), items: [item(at + k)], options: { create: { rate: 1, maxInFlight: 1 }, dedupe: [positions(at + k)], dedupeBlocks: blocks } })),
      );
    for (let at = 0; at < held; at += perCall) await batch(at);
    cost[arena] = await server.count(async () => {
      for (let at = held; at < held + total; at += perCall) await batch(at);
    });
  }
  const made = cost.fresh as number;
  const seedBatch = async (at: number): Promise<void> => {
    await seed.defineRateLimits('seedfresh', Object.fromEntries(Array.from({ length: perCall }, (_, k) => [name(at + k), 1])));
    await Promise.all(Array.from({ length: perCall }, (_, k) => seed.enqueue('seedfresh', name(at + k), item(at + k))));
  };
  for (let at = 0; at < held; at += perCall) await seedBatch(at);
  const seedMade = await server.count(async () => {
    for (let at = held; at < held + total; at += perCall) await seedBatch(at);
  });
  out(`kickoff: a new queue made by its one URL, 250 a call, 14 dedupe bits as a block, into ${held.toLocaleString('en-US')} queues: weir, per URL`, Math.round(made / total).toLocaleString('en-US'), `${(made / seedMade).toFixed(2)}× the seed design's`);
  out("the same, its dedupe bits as positions (BITFIELD): weir, per URL", Math.round((cost.freshpos as number) / total).toLocaleString('en-US'), `${((cost.freshpos as number) / made).toFixed(2)}× the block form`);
  out('kickoff: a new queue and its URL: seed design (define_rate_limits, enqueue), per URL', Math.round(seedMade / total).toLocaleString('en-US'), 'its scripts as written, no dedupe');
}

/**
 * The cost bench's cases (BENCH_PART=cost), counted: 64 loops of
 * commitAndTake on one deep queue and over 10,000 (each batch of a turn's
 * calls one script call), and 64 producers of one-item enqueues over 100
 * and 10,000 queues, weir beside the seed design. Each arena is filled and
 * run a while first, so the queues' chunks and the leases in flight are as
 * the cost bench's are when it counts.
 */
async function inFlightCases(server: Awaited<ReturnType<typeof startCounted>>, q: FairQueue, seed: SeedDesignQueue, out: Out): Promise<void> {
  const warm = 1000;
  const counted = Number(process.env.BENCH_INFLIGHT_ITEMS ?? 3200);
  const wide = Array.from({ length: 10_000 }, (_, i) => `q${i}`);
  await q.setLimits('one64', { q0: { rate: 'unlimited' } });
  for (let k = 0; k < warm + counted + 100; k += 1000) await q.enqueue('one64', 'q0', Array.from({ length: 1000 }, (_, m) => item(k + m)));
  await q.setLimits('wide64', Object.fromEntries(wide.map((k) => [k, { rate: 'unlimited' as const }])));
  for (let k = 0; k < warm + counted + 100; k += 1000) {
    await q.enqueueAll('wide64', Array.from({ length: 1000 }, (_, m) => ({ queue: wide[(k + m) % wide.length] as string, items: [item(k + m)] })));
  }
  const perItem: Record<string, number> = {};
  for (const arena of ['one64', 'wide64']) {
    const loops = commitAndTakeLoops(q, arena);
    await drive(warm, 64, loops.op);
    perItem[arena] = (await server.count(async () => void (await drive(counted, 64, loops.op)))) / counted;
    await loops.finish();
  }
  const [one, many] = [perItem.one64 as number, perItem.wide64 as number];
  out('commitAndTake, 64 in flight, one deep queue: weir, per item', Math.round(one).toLocaleString('en-US'), 'a turn of 64 calls: one script call');
  out('commitAndTake, 64 in flight, 10,000 queues: weir, per item', Math.round(many).toLocaleString('en-US'), `${(one / many).toFixed(2)} of one queue's items per instruction (the cost bench's rate target: ≥ 0.9)`);
  for (const queues of [100, 10_000]) {
    const { weir: weirOp, seed: seedOp } = await spreadEnqueues(q, seed, queues);
    // (Filled first as the cost bench's queues are when it counts: 20 items a queue at 100 queues.)
    await drive(Math.min(20 * queues, 2000), 64, weirOp);
    await drive(Math.min(20 * queues, 2000), 64, seedOp);
    const w = (await server.count(async () => void (await drive(2 * counted, 64, weirOp)))) / (2 * counted);
    const s = (await server.count(async () => void (await drive(2 * counted, 64, seedOp)))) / (2 * counted);
    out(`enqueue spread over ${queues.toLocaleString('en-US')} queues, 64 producers: weir, per item`, Math.round(w).toLocaleString('en-US'), `${(w / s).toFixed(2)}× the seed design's ${Math.round(s).toLocaleString('en-US')} (its one call an item also costs the kernel, which this does not count)`);
  }
}

export async function queueInstructionBenchmarks(out: Out, n = Number(process.env.BENCH_CALLS ?? 1000)): Promise<void> {
  if (!has('valgrind') || !has('callgrind_control')) {
    out('instructions per call', 'skipped', 'needs valgrind (apt-get install valgrind)');
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'weir-callgrind-'));
  const server = await startCounted(dir);
  const { redis } = server;
  const q = new FairQueue(redis);
  const seedClient = redis.duplicate();
  const seed = new SeedDesignQueue(seedClient);
  const per = (total: number): string => `${Math.round(total / n).toLocaleString('en-US')}`;
  try {
    const noopKeys = arenaKeys('weir', 'noop');
    const runner = noopRunner(redis);
    await runner.run('noop', noopKeys, ['x']);
    const noop = await server.count(async () => {
      for (let i = 0; i < n; i++) await runner.run('noop', noopKeys, ['x']);
    });
    out('no-op script call: instructions', per(noop), 'the floor every call pays (13 keys, one argument)');

    await kickoffCase(server, q, seed, out, n);
    if (process.env.BENCH_INSTR_ONLY === 'kickoff') return;

    const wide = Array.from({ length: 10_000 }, (_, i) => `q${i}`);
    await q.setLimits('wide', Object.fromEntries(wide.map((k) => [k, { rate: 'unlimited' as const }])));
    await q.setLimits('one', { q0: { rate: 'unlimited' } });
    for (let k = 0; k < n + 100; k += 500) await q.enqueue('one', 'q0', Array.from({ length: 500 }, (_, m) => item(k + m)));
    await seed.defineRateLimits('seedwide', Object.fromEntries(wide.map((k) => [k, 1_000_000])));

    let i = 0;
    const enq = await server.count(async () => {
      for (let k = 0; k < n; k++, i++) await q.enqueue('wide', `q${i % wide.length}`, [item(i)]);
    });
    let j = 0;
    const seedEnq = await server.count(async () => {
      for (let k = 0; k < n; k++, j++) await seed.enqueue('seedwide', `q${j % wide.length}`, item(j));
    });
    out('enqueue, one URL per call, a different queue each (10,000 queues): weir', per(enq), `${(enq / seedEnq).toFixed(2)}× the seed design's`);
    out('enqueue, one URL per call, a different queue each (10,000 queues): seed design', per(seedEnq), 'its script as written');

    // (A fixed sequence of positions, so that runs compare: the bits already
    // set, and so the items dropped, are the same every run.)
    const bits = 512 * 6000;
    let rand = 12345;
    // (In 32 bits, exactly: rand * 1103515245 in a double loses the low
    // bits, and the sequence fell into a short cycle of repeated links.)
    const next = (n: number): number => {
      rand = (Math.imul(rand, 1103515245) + 12345) >>> 0;
      return rand % n;
    };
    // A link's 14 bits in one 512-bit block, as the crawler's blocked Bloom filter puts them.
    const blockBits = (): number[] => {
      const block = next(bits / 512);
      return Array.from({ length: 14 }, () => block * 512 + next(512));
    };
    const linkQueues = Array.from({ length: 100 }, (_, k) => `s${k}`);
    await q.setLimits('links', Object.fromEntries(linkQueues.map((k) => [k, { rate: 'unlimited' as const }])));
    await q.configureDedupe('links', { bits, hashes: 14 });
    const pages = Math.max(1, Math.round(n / 10));
    let u = 0;
    const sent: { queue: string; links: string[]; dedupe: number[][] }[] = [];
    const linked = await server.count(async () => {
      for (let k = 0; k < pages; k++) {
        const links = Array.from({ length: 50 }, () => item(u++));
        const page = { queue: linkQueues[k % linkQueues.length] as string, links, dedupe: links.map(blockBits) };
        sent.push(page);
        await q.enqueue('links', page.queue, page.links, { dedupe: page.dedupe, dedupeBlocks: true });
      }
    });
    out("enqueue, a page's 50 links in one call, 14 dedupe bits each: weir, per link", Math.round(linked / (pages * 50)).toLocaleString('en-US'), `${Math.round(linked / pages).toLocaleString('en-US')} per call`);
    // The same pages' links again, all seen now (a crawl's navigation links
    // met by another worker): the first few calls teach the client that
    // most links come back seen (src/queue/seen-check.ts), the rest count.
    for (const page of sent.slice(0, 5)) await q.enqueue('links', page.queue, page.links, { dedupe: page.dedupe, dedupeBlocks: true });
    const again = await server.count(async () => {
      for (const page of sent.slice(5)) await q.enqueue('links', page.queue, page.links, { dedupe: page.dedupe, dedupeBlocks: true });
    });
    out("enqueue, a page's 50 links again, all seen: weir, per link", Math.round(again / (Math.max(1, sent.length - 5) * 50)).toLocaleString('en-US'), 'read from the bitmap first, none sent (seen-check.ts)');

    // Enough in the wide arena for the dequeues below (the enqueue case put n there).
    for (let k = n; k < 2 * n + 100; k++) await q.enqueue('wide', `q${k % wide.length}`, [item(k)]);
    for (let k = 0; k < n + 100; k++) await seed.enqueue('seedwide', `q${k % wide.length}`, item(k));
    for (const arena of ['one', 'wide']) {
      let lease = (await q.take(arena)) as Lease;
      const taken = await server.count(async () => {
        for (let k = 0; k < n; k++) lease = (await q.commitAndTake(lease).next) as Lease;
      });
      await q.commit(lease);
      out(`commitAndTake, ${arena === 'one' ? 'one deep queue' : '10,000 queues'}: weir`, per(taken), `${(taken / noop).toFixed(1)}× a no-op call`);
    }
    const seedTake = await server.count(async () => {
      for (let k = 0; k < n; k++) {
        const r = await seed.dequeue('seedwide');
        if (r) await seed.commit(r.txnid);
      }
    });
    out('dequeue+commit, 10,000 queues: seed design (two calls)', per(seedTake), 'its scripts as written');
    await inFlightCases(server, q, seed, out);
  } finally {
    await q.close();
    seedClient.disconnect();
    await server.stop();
    if (!process.env.BENCH_KEEP) rmSync(dir, { recursive: true, force: true });
    else out('callgrind dumps kept', dir, 'one dump a case, in the order above (cg.out.1, cg.out.2, …)');
  }
}
