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
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { startRedis } from '../test/helpers/redis.js';
import { serveCorpus } from './corpus.js';
import { callsBetween, redisUsage, scriptUsecBetween, totalCalls } from './redis-usage.js';
import { ShadowCalls, type ShadowCost } from './shadow-calls.js';
import { crawlQuietly, isPageServed, manyDomainSeed, startManyDomainWeb } from './web.js';

type Out = (name: string, value: string, note?: string) => void;

/** Redis's cost of one `weir crawl` of `seed`: CPU s and calls by command. */
interface CrawlCost {
  /** Redis CPU s, user + sys. */
  cpu: number;
  /** Of it: the kernel's (sockets, epoll) and the script calls' (as Redis times them). */
  sys: number;
  scripts: number;
  calls: Map<string, number>;
  /** When mirrored: the same pages into the seed design's scripts and into one empty call each (bench/shadow-calls.ts). */
  shadows?: { seed: ShadowCost; empty: ShadowCost };
}

type Log = { path: string; status: number }[];
/** A crawl's servers: their request log, and which of its entries are pages. */
interface Site {
  log: Log;
  reset: () => void;
  isPage: (r: Log[number]) => boolean;
}

async function crawlCost(seed: string, dir: string, concurrency: number, mirror?: Site): Promise<CrawlCost> {
  const server = await startRedis();
  const shadow = mirror ? await ShadowCalls.start(mirror.log, mirror.isPage) : undefined;
  const redis = new Redis({ port: server.port, host: '127.0.0.1' });
  try {
    const seedPath = join(dir, 'cost.yaml');
    await writeFile(seedPath, seed);
    // Our own INFO calls are left out of the counts below.
    const before = await redisUsage(redis);
    const code = await crawlQuietly(seedPath, concurrency, join(dir, 'cost.jsonl'), server.url);
    const after = await redisUsage(redis);
    const shadows = await shadow?.stop();
    if (code !== 0) throw new Error(`weir crawl exited ${code}`);
    return { cpu: after.cpu - before.cpu, sys: after.sys - before.sys, scripts: scriptUsecBetween(before, after) / 1e6, calls: callsBetween(before, after), ...(shadows ? { shadows } : {}) };
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

/**
 * The crawl again, its pages mirrored as they are served into the seed
 * design's scripts and into one empty script call each (bench/shadow-calls.ts):
 * three Redis CPUs per page under the same pace and the same load, side by
 * side. (Their two servers and calls load the machine too, so weir's figure
 * here runs above the plain run's.)
 */
async function besideFloors(out: Out, name: string, seedText: string, dir: string, concurrency: number, site: Site): Promise<void> {
  site.reset();
  const cost = await crawlCost(seedText, dir, concurrency, site);
  const pages = site.log.filter(site.isPage).length;
  const { seed, empty } = cost.shadows ?? {};
  if (!seed || !empty) throw new Error('no mirrored calls');
  const weirMs = (cost.cpu * 1000) / pages;
  const ms = (c: ShadowCost): number => (c.cpu * 1000) / c.pages;
  out(`${name}, side by side: weir, Redis CPU per page (ms)`, weirMs.toFixed(3), `${pages} pages, the crawl with the two below beside it`);
  out(`${name}, side by side: the seed design's scripts (ms)`, ms(seed).toFixed(3), `weir ÷ it ${(weirMs / ms(seed)).toFixed(2)}; the same pages at the same moments: enqueue, dequeue, commit each (${(seed.calls / seed.pages).toFixed(1)} calls a page), no dedupe`);
  out(`${name}, side by side: one empty script call a page (ms)`, ms(empty).toFixed(3), `weir ÷ it ${(weirMs / ms(empty)).toFixed(2)}; the same pages at the same moments: the floor of a design making one call a page`);
}

const isHtmlPage = (r: Log[number]): boolean => isPageServed(r) && r.path.endsWith('.html');

/** The crawl alone (its cost per page), then again beside the floors. */
async function measure(out: Out, name: string, target: string, seedText: string, dir: string, concurrency: number, site: Site): Promise<void> {
  site.reset();
  const cost = await crawlCost(seedText, dir, concurrency);
  report(out, name, site.log.filter(site.isPage).length, cost, target);
  await besideFloors(out, name, seedText, dir, concurrency, site);
}

export async function redisCostBenchmarks(out: Out, dir: string, corpusRoot: string | null): Promise<void> {
  const bloom = 'bloom: { expectedUrls: 100000, falsePositiveRate: 0.000001 }';
  if (corpusRoot) {
    const single = await serveCorpus(corpusRoot, 1);
    const seed = ['arena: cost', 'rateLimits:', `  "${single.keys[0]}": unlimited`, 'start:', `  - ${single.origins[0]}/index.html`, 'allowPrivateNetworks: true', 'maxInFlightPerDomain: 8', bloom, ''].join('\n');
    await measure(out, 'one origin (python3-doc), unlimited, 8 in flight', '≤ 0.1', seed, dir, 16, { log: single.log, reset: () => single.reset(), isPage: isHtmlPage });
    await single.close();
  }
  const web = await startManyDomainWeb();
  await measure(out, '100 domains, unlimited, 4 in flight', '≤ 0.15', manyDomainSeed(web, 'unlimited'), dir, 64, { log: web.log, reset: () => web.reset(), isPage: isPageServed });
  await web.close();
}
