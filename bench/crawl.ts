/**
 * npm run bench:crawl — crawl throughput on a local corpus of real HTML,
 * side by side in one run:
 *   - weir: `weir crawl` with its worker processes against a private
 *     redis-server, rate limits out of the way ("unlimited"), robots.txt,
 *     dedupe and politeness machinery on; then again with --warc (the cost
 *     of keeping every exchange);
 *   - wget -r, one process per origin, in parallel;
 *   - Crawlee's CheerioCrawler (in its own process);
 *   - the bare link-extraction ceiling: parse + extract, no network, one core
 *     (weir's streaming htmlparser2 pass, and cheerio's load + select).
 * Pages/s is HTML pages fetched with 200 over the time from the first request
 * to the last, as the corpus servers saw them.
 * Corpus: Debian's python3-doc (apt-get install python3-doc), served under
 * BENCH_ORIGINS origins (default 4). Env: BENCH_WORKERS (weir worker
 * processes, default 2), BENCH_CONCURRENCY (per worker / Crawlee, default 32).
 */
import { spawn } from 'node:child_process';
import { statSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import * as cheerio from 'cheerio';
import { Redis } from 'ioredis';
import { extractLinks } from '../src/crawl/links/extract.js';
import { normalizeUrl } from '../src/crawl/urls/normalize.js';
import { cliBundle } from '../test/helpers/cli-bundle.js';
import { findCorpus, serveCorpus, type CorpusServers } from './corpus.js';
import { paceBenchmarks } from './pace.js';
import { strictBenchmarks } from './strict.js';
import { clusterCrawlBenchmarks } from './cluster-cost.js';
import { cpuBenchmarks } from './cpu.js';
import { politeCpuBenchmarks } from './polite-cpu.js';
import { kickoffFileBenchmarks } from './kickoff-files.js';
import { bigArenaBenchmarks } from './big-arena.js';
import { frontierBenchmarks } from './frontier.js';
import { revisitShareBenchmarks } from './revisit-share.js';
import { adaptiveBenchmarks } from './adaptive.js';
import { redisCapacityBenchmarks } from './redis-capacity.js';
import { redisCostBenchmarks } from './redis-cost.js';
import { crawlInstructionBenchmarks } from './crawl-instructions.js';
import { callsBetween, redisUsage, totalCalls } from './redis-usage.js';
import { startRedis } from '../test/helpers/redis.js';

const ORIGINS = Number(process.env.BENCH_ORIGINS ?? 4);
const WORKERS = Number(process.env.BENCH_WORKERS ?? 2);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const ROOT = new URL('../', import.meta.url).pathname;

const rows: [string, string, string][] = [];
const out = (name: string, value: string, note = ''): void => {
  rows.push([name, value, note]);
  console.log(`${name.padEnd(58)} ${value.padStart(12)}  ${note}`);
};
const table = (): void => {
  console.log('\n| measure | value | note |\n| --- | ---: | --- |');
  for (const [a, b, c] of rows) console.log(`| ${a} | ${b} | ${c} |`);
};

/** BENCH_PART: corpus (the python3-doc crawls), cpu (bench/cpu.ts: CPU per page beside wget and Crawlee), pace (bench/pace.ts), redis (bench/redis-cost.ts), redis-count (bench/crawl-instructions.ts: Redis instructions per page of the 100-domain crawl, counted under callgrind), capacity (bench/redis-capacity.ts), cluster (bench/cluster-cost.ts), strict (bench/strict.ts: sites behind nginx limit_req), polite (bench/polite-cpu.ts: CPU per page at 2/s against unlimited), adaptive (bench/adaptive.ts: a learned pace shared by 1 and 4 workers against independent AutoThrottle-style clients), revisit (bench/revisit-share.ts: adaptive revisit intervals against a fixed one), kickoff (bench/kickoff-files.ts: 10^6 start URLs from a file), bigarena (bench/big-arena.ts: status, the page and metrics over 10^6 domains), frontier (bench/frontier.ts: a simulated crawl over 10^6 domains on a 3-master Cluster), or all (default). */
const PART = process.env.BENCH_PART ?? 'all';
/** The parts that run alone: each in a temporary directory, then the table, then exit. */
const ALONE: Record<string, (dir: string) => Promise<void>> = {
  cluster: (dir) => clusterCrawlBenchmarks(out, dir),
  redis: (dir) => redisCostBenchmarks(out, dir, findCorpus()),
  'redis-count': (dir) => crawlInstructionBenchmarks(out, dir),
  capacity: () => redisCapacityBenchmarks(out),
  pace: (dir) => paceBenchmarks(out, dir),
  strict: (dir) => strictBenchmarks(out, dir),
  polite: (dir) => politeCpuBenchmarks(out, dir),
  adaptive: (dir) => adaptiveBenchmarks(out, dir),
  revisit: () => revisitShareBenchmarks(out),
  kickoff: (dir) => kickoffFileBenchmarks(out, dir),
  bigarena: (dir) => bigArenaBenchmarks(out, dir),
  frontier: (dir) => frontierBenchmarks(out, dir),
  cpu: async (dir) => {
    const corpus = findCorpus();
    if (!corpus) throw new Error('BENCH_PART=cpu needs the python3-doc corpus: apt-get install python3-doc');
    await cpuBenchmarks(out, dir, corpus);
  },
};
const alone = Object.hasOwn(ALONE, PART) ? ALONE[PART] : undefined;
if (alone) {
  const dir = await mkdtemp(join(tmpdir(), `weir-${PART}-`));
  await alone(dir);
  table();
  await rm(dir, { recursive: true, force: true });
  process.exit(0);
}

const root = findCorpus();
if (!root) {
  process.stderr.write('bench:crawl needs the python3-doc corpus: apt-get install python3-doc (Debian/Ubuntu); BENCH_PART=pace runs the rest\n');
  process.exit(2);
}

/** HTML pages reachable by a[href]/area[href] links from index.html, as paths. */
async function reachable(): Promise<Set<string>> {
  const seen = new Set<string>(['/index.html']);
  const todo = ['/index.html'];
  while (todo.length > 0) {
    const path = todo.pop() as string;
    let text: string;
    try {
      text = await readFile(join(root as string, path), 'utf8');
    } catch {
      seen.delete(path);
      continue;
    }
    const page = extractLinks(text);
    const base = page.base ? (normalizeUrl(page.base, `http://x${path}`) ?? `http://x${path}`) : `http://x${path}`;
    for (const href of page.hrefs) {
      const n = normalizeUrl(href, base);
      if (!n) continue;
      const u = new URL(n);
      if (u.host !== 'x' || !u.pathname.endsWith('.html')) continue;
      const p = decodeURIComponent(u.pathname);
      if (!seen.has(p)) {
        seen.add(p);
        todo.push(p);
      }
    }
  }
  return seen;
}

function span(log: CorpusServers['log']): number {
  const t = log.map((r) => r.at);
  return (Math.max(...t) - Math.min(...t)) / 1000;
}

const htmlPages = (log: CorpusServers['log']): CorpusServers['log'] => log.filter((r) => r.status === 200 && r.path.endsWith('.html'));

function runProcess(cmd: string, args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(cmd, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    p.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

const want = await reachable();
const servers = await serveCorpus(root, ORIGINS);
console.log(`corpus ${root}: ${want.size} pages reachable from index.html, served under ${ORIGINS} origins (${want.size * ORIGINS} pages)`);
const tmp = await mkdtemp(join(tmpdir(), 'weir-bench-'));

// weir.
const redisServer = await startRedis();
const redis = new Redis({ port: redisServer.port, host: '127.0.0.1' });
const seedPath = join(tmp, 'bench.yaml');
await writeFile(
  seedPath,
  [
    'arena: bench',
    'rateLimits:',
    ...servers.ports.map((p) => `  "127.0.0.1:${p}": unlimited`),
    'start:',
    ...servers.origins.map((o) => `  - ${o}/index.html`),
    'allowPrivateNetworks: true',
    `maxInFlightPerDomain: ${CONCURRENCY}`,
    'bloom: { expectedUrls: 100000, falsePositiveRate: 0.000001 }',
    '',
  ].join('\n'),
);
interface WeirRun {
  /** From `weir crawl` starting to its exit, ms. */
  wallMs: number;
  pages: number;
  rate: number;
  span: number;
  workerCpuMs: number;
  calls: number;
  cpu: number;
  links: number;
  missing: number;
}

/** One `weir crawl` of the corpus on an emptied Redis; `extra` flags (say, --warc DIR). */
async function weirCrawl(extra: string[], on: { seedPath: string; servers: CorpusServers; origins: number; concurrency: number } = { seedPath, servers, origins: ORIGINS, concurrency: CONCURRENCY }): Promise<WeirRun> {
  await redis.flushall();
  await redis.config('RESETSTAT');
  on.servers.reset();
  const r0 = await redisUsage(redis);
  const t0 = performance.now();
  const run = await runProcess(process.execPath, [cliBundle(), 'crawl', on.seedPath, '--workers', String(WORKERS), '--concurrency', String(on.concurrency), '--out', join(tmp, 'weir.jsonl'), '--redis', redisServer.url, ...extra], { WEIR_LOG_LEVEL: 'info' });
  const wallMs = performance.now() - t0;
  const r1 = await redisUsage(redis);
  if (run.code !== 0) {
    process.stderr.write(run.stderr);
    throw new Error(`weir crawl exited ${run.code}`);
  }
  const log = [...on.servers.log];
  const pages = htmlPages(log);
  let workerCpuMs = 0;
  for (const line of run.stderr.split('\n')) {
    if (!line.includes('"worker finished"')) continue;
    const j = JSON.parse(line) as { cpuUserMs: number; cpuSystemMs: number };
    workerCpuMs += j.cpuUserMs + j.cpuSystemMs;
  }
  const links = (await readFile(join(tmp, 'weir.jsonl'), 'utf8'))
    .trim()
    .split('\n')
    .reduce((a, l) => a + ((JSON.parse(l) as { links: number }).links ?? 0), 0);
  let missing = 0;
  for (let o = 0; o < on.origins; o++) {
    const got = new Set(pages.filter((r) => r.origin === o).map((r) => r.path));
    for (const p of want) if (!got.has(p)) missing++;
  }
  return { wallMs, pages: pages.length, rate: pages.length / span(log), span: span(log), workerCpuMs, calls: totalCalls(callsBetween(r0, r1)), cpu: r1.cpu - r0.cpu, links, missing };
}

const w = await weirCrawl([]);
const weirRate = w.rate;
out('weir: HTML pages fetched', String(w.pages), `${w.missing} reachable pages missed (target 0)`);
out('weir: pages/s', weirRate.toFixed(1), `${WORKERS} worker processes × concurrency ${CONCURRENCY}, ${w.span.toFixed(2)} s first to last request`);
out('weir: links/s through normalise+dedupe+enqueue', (w.links / w.span).toFixed(0), `${w.links} links found on pages`);
out('weir: Redis calls per page', (w.calls / w.pages).toFixed(2), 'INFO commandstats, scripts and plain commands');
out('weir: Redis CPU per page (ms)', ((w.cpu * 1000) / w.pages).toFixed(3), 'INFO cpu, main thread');
out('weir: worker CPU per page (ms)', (w.workerCpuMs / w.pages).toFixed(2), 'process.cpuUsage of all workers');

// The same crawl keeping WARC files: what archiving costs.
const warcDir = join(tmp, 'warc');
const ww = await weirCrawl(['--warc', warcDir]);
const warcBytes = (await readdir(warcDir)).reduce((a, f) => a + statSync(join(warcDir, f)).size, 0);
out('weir --warc: pages/s', ww.rate.toFixed(1), `${ww.pages} pages, ${ww.missing} missed`);
out('weir --warc / weir pages/s', (ww.rate / weirRate).toFixed(2), 'same run, same corpus');
out('weir --warc: worker CPU per page (ms)', (ww.workerCpuMs / ww.pages).toFixed(2), `vs ${(w.workerCpuMs / w.pages).toFixed(2)} without`);
out('weir --warc: WARC bytes per page', (warcBytes / ww.pages).toFixed(0), `${(warcBytes / 1024 / 1024).toFixed(1)} MiB in ${(await readdir(warcDir)).length} files (gzip per record; robots.txt included)`);
// One origin, 8 in flight: unlimited, and a numeric limit of 100,000/s
// (10 µs between requests: politeness machinery on, but no real wait), against
// wget -r on the same origin. Wall time is from the command's start to its exit.
const single = await serveCorpus(root, 1);
const singleSeed = async (rate: string): Promise<string> => {
  const path = join(tmp, `single-${rate}.yaml`);
  await writeFile(path, ['arena: bench', 'rateLimits:', `  "127.0.0.1:${single.ports[0]}": ${rate}`, 'start:', `  - ${single.origins[0]}/index.html`, 'allowPrivateNetworks: true', 'maxInFlightPerDomain: 8', 'bloom: { expectedUrls: 100000, falsePositiveRate: 0.000001 }', ''].join('\n'));
  return path;
};
const su = await weirCrawl([], { seedPath: await singleSeed('unlimited'), servers: single, origins: 1, concurrency: 16 });
const sn = await weirCrawl([], { seedPath: await singleSeed('100000'), servers: single, origins: 1, concurrency: 16 });
single.reset();
const t1 = performance.now();
const sw = await runProcess('wget', ['-r', '-l', 'inf', '-np', '-nv', '--no-host-directories', '--ignore-tags=img,link,script,style', '-P', join(tmp, 'wget-single'), `${single.origins[0]}/index.html`]);
const swWall = performance.now() - t1;
const swPages = htmlPages(single.log);
const swRate = swPages.length / span(single.log);
out('one origin, wget -r: pages/s (wall s)', `${swRate.toFixed(1)} (${(swWall / 1000).toFixed(2)})`, `${swPages.length} pages, exit ${sw.code}`);
out('one origin, weir unlimited, 8 in flight: pages/s (wall s)', `${su.rate.toFixed(1)} (${(su.wallMs / 1000).toFixed(2)})`, `${su.pages} pages, ${su.missing} missed; worker CPU ${(su.workerCpuMs / su.pages).toFixed(2)} ms/page`);
out('one origin, weir 100,000/s, 8 in flight: pages/s (wall s)', `${sn.rate.toFixed(1)} (${(sn.wallMs / 1000).toFixed(2)})`, `${sn.pages} pages, ${sn.missing} missed; worker CPU ${(sn.workerCpuMs / sn.pages).toFixed(2)} ms/page`);
out('one origin: weir unlimited / wget pages/s', (su.rate / swRate).toFixed(2), 'target ≥ 2');
out('one origin: weir 100,000/s / wget pages/s', (sn.rate / swRate).toFixed(2), 'target ≥ 1.5');
out('one origin: weir / wget wall time (unlimited, 100,000/s)', `${(su.wallMs / swWall).toFixed(2)}, ${(sn.wallMs / swWall).toFixed(2)}`, 'target ≤ 1.3');
await single.close();

redis.disconnect();
await redisServer.destroy();

// wget -r, one process per origin, in parallel.
servers.reset();
const wgets = await Promise.all(
  servers.origins.map((o, i) =>
    runProcess('wget', ['-r', '-l', 'inf', '-np', '-nv', '--no-host-directories', '--ignore-tags=img,link,script,style', '-P', join(tmp, `wget${i}`), `${o}/index.html`]),
  ),
);
const wgetPages = htmlPages(servers.log);
const wgetRate = wgetPages.length / span(servers.log);
out('wget -r (one process per origin): HTML pages fetched', String(wgetPages.length), `exit codes ${wgets.map((w) => w.code).join(',')}`);
out('wget -r: pages/s', wgetRate.toFixed(1), `${span(servers.log).toFixed(2)} s`);

// Crawlee.
servers.reset();
const crawlee = await runProcess(process.execPath, ['bench/crawlee-run.mjs', ...servers.origins.map((o) => `${o}/index.html`)], {
  BENCH_CONCURRENCY: String(CONCURRENCY),
  CRAWLEE_STORAGE_DIR: join(tmp, 'crawlee'),
});
const crawleePages = htmlPages(servers.log);
const crawleeRate = crawleePages.length / span(servers.log);
out('Crawlee CheerioCrawler: HTML pages fetched', String(crawleePages.length), `exit ${crawlee.code}, maxConcurrency ${CONCURRENCY}`);
out('Crawlee CheerioCrawler: pages/s', crawleeRate.toFixed(1), `${span(servers.log).toFixed(2)} s`);

// The ceiling: parse + extract only, one core.
const files = [...want].map((p) => join(root, p));
const bodies = await Promise.all(files.map((f) => readFile(f, 'utf8')));
let t = performance.now();
let n = 0;
for (const b of bodies) n += extractLinks(b).hrefs.length;
const streamRate = bodies.length / ((performance.now() - t) / 1000);
t = performance.now();
let m = 0;
for (const b of bodies) m += cheerio.load(b)('a[href], area[href]').length;
const cheerioRate = bodies.length / ((performance.now() - t) / 1000);
out('ceiling: htmlparser2 streaming link pass, one core (pages/s)', streamRate.toFixed(0), `${n} links in ${bodies.length} pages`);
out('ceiling: cheerio.load + select, one core (pages/s)', cheerioRate.toFixed(0), `${m} links (cheerio's default parse5 path)`);

out('weir / wget pages/s', (weirRate / wgetRate).toFixed(2), 'target ≥ 1');
out('weir / Crawlee pages/s', (weirRate / crawleeRate).toFixed(2), 'target ≥ 5');

if (PART === 'all') {
  await paceBenchmarks(out, tmp);
  await redisCostBenchmarks(out, tmp, root);
  await redisCapacityBenchmarks(out);
}
table();
console.log(`\nfiles: ${relative(ROOT, tmp)}`);
await servers.close();
await rm(tmp, { recursive: true, force: true });
process.exit(0);
