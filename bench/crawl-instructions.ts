/**
 * What a crawled page costs Redis in CPU instructions (BENCH_PART=redis-count
 * of npm run bench:crawl): the 100-domain crawl of BENCH_PART=redis (100
 * synthetic sites of 35 pages, `weir crawl --workers 2 --concurrency 64`,
 * kickoff included) against a redis-server under valgrind's callgrind
 * (bench/queue-instructions.ts startCounted), counted from the command's
 * start to its exit, ÷ the pages the sites served with 200. Once with every
 * site `unlimited`, once at 2/s each (a polite crawl: its pages spread over
 * some 18 s). An instruction count repeats within about 2 % from run to run
 * whatever the machine is doing, where Redis's CPU time a page on two shared
 * cores moves by a fifth; BENCH_COUNT_ROUNDS (default 1) repeats each.
 * Then a worker's counters flush alone: 620 fields added to a hash of 910
 * (100 domains' tallies), 50 times, per field (src/crawl/counters/add-fields.ts).
 * BENCH_REDIS_SERVER names the redis-server counted, as for
 * BENCH_PART=instructions of bench:queue, and BENCH_KEEP=1 keeps the
 * callgrind dumps for `callgrind_annotate` (a directory a crawl, printed).
 * Needs valgrind; skipped without it.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { addFields, addTo, type FieldAdds } from '../src/crawl/counters/add-fields.js';
import { has, startCounted } from './queue-instructions.js';
import { crawlQuietly, isPageServed, manyDomainSeed, startManyDomainWeb } from './web.js';

type Out = (name: string, value: string, note?: string) => void;

const RATES = ['unlimited', '2'] as const;

export async function crawlInstructionBenchmarks(out: Out, dir: string): Promise<void> {
  if (!has('valgrind') || !has('callgrind_control')) {
    out('Redis instructions per page', 'skipped', 'needs valgrind (apt-get install valgrind)');
    return;
  }
  const rounds = Number(process.env.BENCH_COUNT_ROUNDS ?? 1);
  const web = await startManyDomainWeb();
  // (The bench's own directory is removed at its end.)
  const dumps = process.env.BENCH_KEEP === '1' ? mkdtempSync(join(tmpdir(), 'weir-crawl-callgrind-')) : dir;
  try {
    for (const rate of RATES) {
      const seedPath = join(dir, `count-${rate}.yaml`);
      writeFileSync(seedPath, manyDomainSeed(web, rate, 'count'));
      const perPage: number[] = [];
      for (let round = 0; round < rounds; round++) {
        web.reset();
        // (A directory a server: each numbers its dumps from 1.)
        const at = mkdtempSync(join(dumps, `cg-${rate}-`));
        const server = await startCounted(at);
        try {
          let code: number | null = null;
          const total = await server.count(async () => {
            code = await crawlQuietly(seedPath, 64, join(dir, 'count.jsonl'), `redis://127.0.0.1:${server.redis.options.port}`);
          });
          if (code !== 0) throw new Error(`weir crawl exited ${code}`);
          perPage.push(total / web.log.filter(isPageServed).length);
          if (dumps !== dir) out(`callgrind dump kept (${rate}, round ${round + 1})`, at);
        } finally {
          await server.stop();
        }
      }
      const shown = perPage.map((x) => Math.round(x).toLocaleString('en-US'));
      const pages = web.log.filter(isPageServed).length;
      out(`100 domains, ${rate === 'unlimited' ? 'unlimited' : `${rate}/s each`}: Redis instructions per page`, shown.join(', '), `${pages} pages; weir crawl --workers 2 --concurrency 64, kickoff included, counted under callgrind`);
    }
  } finally {
    await web.close();
  }
  await flushInstructions(out, dumps);
}

/** A counters flush as a worker sends one each second: 620 of a 910-field hash's fields (100 domains), per field. */
async function flushInstructions(out: Out, dumps: string): Promise<void> {
  const server = await startCounted(mkdtempSync(join(dumps, 'cg-flush-')));
  const key = 'weir:{count}:cstats';
  const names = ['pages', 'bytes', 'enqueued', 'robots', 'errors', 'released', 'dequeued', 'late', 'stale', 'redirects'];
  const field = (i: number): string => `d${i % 100}.test:${names[Math.floor(i / 100)] ?? 'other'}`;
  const flush = async (): Promise<void> => {
    const adds: FieldAdds = new Map();
    for (let i = 0; i < 620; i++) addTo(adds, key, field(i), (i % 7) + 1);
    const p = server.redis.pipeline();
    addFields(p, adds);
    await p.exec();
  };
  try {
    for (let i = 0; i < 910; i++) await server.redis.hset(key, field(i), String(i * 1000));
    await flush();
    const total = await server.count(async () => {
      for (let i = 0; i < 50; i++) await flush();
    });
    out('a counters flush: Redis instructions per field', Math.round(total / 50 / 620).toLocaleString('en-US'), '620 fields of a 910-field hash, one script call (src/crawl/counters/add-fields.ts)');
  } finally {
    await server.stop();
  }
}
