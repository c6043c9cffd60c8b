/**
 * What a crawled page costs Redis (BENCH_PART=redis of npm run bench:crawl):
 * a whole `weir crawl --workers 2` (kickoff included) on a fresh
 * redis-server, INFO cpu (main thread, user + sys) and INFO commandstats
 * (commands run inside scripts counted too) before and after, ÷ HTML pages
 * fetched with 200 as the servers logged them. Two crawls:
 *   - one origin: the python3-doc corpus, `unlimited`, 8 in flight;
 *   - many domains: 100 synthetic sites (35 pages each, 20–300 ms latency,
 *     a navigation bar of 8 links on every page and links to 3 other sites'
 *     front pages), `unlimited`, 4 in flight per domain.
 */
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { cliBundle } from '../test/helpers/cli-bundle.js';
import { startRedis } from '../test/helpers/redis.js';
import { serveCorpus } from './corpus.js';
import { callsBetween, redisUsage, scriptUsecBetween, totalCalls } from './redis-usage.js';
import { startSyntheticWeb } from './web.js';

type Out = (name: string, value: string, note?: string) => void;

/** Redis's cost of one `weir crawl` of `seed`: CPU s and calls by command. */
interface CrawlCost {
  /** Redis CPU s, user + sys. */
  cpu: number;
  /** Of it: the kernel's (sockets, epoll) and the script calls' (as Redis times them). */
  sys: number;
  scripts: number;
  calls: Map<string, number>;
}

async function crawlCost(seed: string, dir: string, concurrency: number): Promise<CrawlCost> {
  const server = await startRedis();
  const redis = new Redis({ port: server.port, host: '127.0.0.1' });
  try {
    const seedPath = join(dir, 'cost.yaml');
    await writeFile(seedPath, seed);
    // Our own INFO calls are left out of the counts below.
    const before = await redisUsage(redis);
    const code = await new Promise<number | null>((resolve) => {
      const p = spawn(process.execPath, [cliBundle(), 'crawl', seedPath, '--workers', '2', '--concurrency', String(concurrency), '--out', join(dir, 'cost.jsonl'), '--redis', server.url], { stdio: 'ignore', env: { ...process.env, WEIR_LOG_LEVEL: 'warn' } });
      p.on('exit', resolve);
    });
    if (code !== 0) throw new Error(`weir crawl exited ${code}`);
    const after = await redisUsage(redis);
    return { cpu: after.cpu - before.cpu, sys: after.sys - before.sys, scripts: scriptUsecBetween(before, after) / 1e6, calls: callsBetween(before, after) };
  } finally {
    redis.disconnect();
    // (Stopped with SIGTERM first: a redis-server run under valgrind's
    // callgrind writes its counts as it exits, which SIGKILL would not let it.)
    await server.stop();
    await server.destroy();
  }
}

function report(out: Out, name: string, pages: number, cost: CrawlCost, target: string): void {
  const total = totalCalls(cost.calls);
  const top = [...cost.calls]
    .sort((a, b) => b[1] - a[1])
    .slice(0, Number(process.env.BENCH_TOP ?? 8))
    .map(([k, v]) => `${k.toUpperCase()} ${(v / pages).toFixed(2)}`)
    .join(', ');
  out(`${name}: Redis CPU per page (ms)`, ((cost.cpu * 1000) / pages).toFixed(3), `${pages} pages; target ${target}`);
  const ms = (s: number): string => ((s * 1000) / pages).toFixed(3);
  out(`${name}: of it, in script calls (ms)`, ms(cost.scripts), `kernel (sockets, epoll) ${ms(cost.sys)}, the rest (other commands, parsing, replies) ${ms(cost.cpu - cost.sys - cost.scripts)}`);
  out(`${name}: Redis commands per page`, (total / pages).toFixed(2), `target ≤ 10; ${top}`);
}

const pagesOf = (log: { status: number; path: string }[]): number => log.filter((r) => r.status === 200 && r.path !== '/robots.txt').length;

export async function redisCostBenchmarks(out: Out, dir: string, corpusRoot: string | null): Promise<void> {
  const bloom = 'bloom: { expectedUrls: 100000, falsePositiveRate: 0.000001 }';
  if (corpusRoot) {
    const single = await serveCorpus(corpusRoot, 1);
    const cost = await crawlCost(['arena: cost', 'rateLimits:', `  "${single.keys[0]}": unlimited`, 'start:', `  - ${single.origins[0]}/index.html`, 'allowPrivateNetworks: true', 'maxInFlightPerDomain: 8', bloom, ''].join('\n'), dir, 16);
    report(out, 'one origin (python3-doc), unlimited, 8 in flight', pagesOf(single.log.filter((r) => r.path.endsWith('.html'))), cost, '≤ 0.1');
    await single.close();
  }
  const web = await startSyntheticWeb(Array.from({ length: 100 }, (_, i) => ({ pages: 35, latencyMs: 20 + ((i * 37) % 281), nav: 8, cross: 3 })));
  const seed = ['arena: cost', 'rateLimits:', ...web.keys.map((k) => `  "${k}": unlimited`), 'start:', ...web.origins.map((o) => `  - ${o}/`), 'allowPrivateNetworks: true', 'maxInFlightPerDomain: 4', bloom, ''].join('\n');
  const cost = await crawlCost(seed, dir, 64);
  report(out, '100 domains, unlimited, 4 in flight', pagesOf(web.log), cost, '≤ 0.15');
  await web.close();
}
