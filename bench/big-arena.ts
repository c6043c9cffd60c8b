/**
 * Operator tools on a big arena (BENCH_PART=bigarena of npm run bench:crawl):
 * BENCH_BIG_DOMAINS (n, default 1,000,000) domains listed in a domain file,
 * one start URL each, and 100 of them with a backlog of 10-1,000 URLs,
 * kicked off by the built `weir kickoff` into a redis-server of its own.
 * Then: Redis memory per domain; the built `weir status` (default view,
 * --by errors, --domain, --json) timed from outside; the status page served
 * by `weir status --serve`, its JSON view timed and the page loaded and
 * searched in Chromium; the metrics a worker would serve, timed and sized.
 */
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { loadMetrics } from '../src/crawl/counters/index.js';
import { crawlKeys } from '../src/crawl/store/keys.js';
import { FairQueue } from '../src/queue/index.js';
import { launchChromium } from '../test/helpers/browser.js';
import { startRedis } from '../test/helpers/redis.js';
import { builtCli } from './cpu.js';
import { usedMemory } from './redis-usage.js';
import { writeGzLines } from './kickoff-files.js';

type Out = (name: string, value: string, note?: string) => void;

const run = promisify(execFile);
const site = (i: number): string => `site-${String(i).padStart(7, '0')}.example`;

/** Wall ms of the built CLI, best and median of `times` runs. */
async function timedCli(cli: string, args: string[], times = 5): Promise<{ best: number; median: number; stdout: string }> {
  const ms: number[] = [];
  let stdout = '';
  for (let i = 0; i < times; i++) {
    const t = performance.now();
    stdout = (await run(process.execPath, [cli, ...args], { maxBuffer: 256 * 1024 * 1024, env: { ...process.env, WEIR_LOG_LEVEL: 'warn' } })).stdout;
    ms.push(performance.now() - t);
  }
  ms.sort((a, b) => a - b);
  return { best: ms[0] ?? 0, median: ms[Math.floor(ms.length / 2)] ?? 0, stdout };
}

export async function bigArenaBenchmarks(out: Out, dir: string): Promise<void> {
  const n = Number(process.env.BENCH_BIG_DOMAINS ?? 1_000_000);
  const cli = builtCli();
  await writeGzLines(join(dir, 'domains.csv.gz'), n, (i) => `${site(i)},${1 + (i % 4)}`);
  await writeGzLines(join(dir, 'start.txt.gz'), n, (i) => `https://www.${site(i)}/`);
  const seedPath = join(dir, 'big.yaml');
  await writeFile(seedPath, `arena: big\ndomainFiles: [domains.csv.gz]\nstartFiles: [start.txt.gz]\nbloom: { expectedUrls: ${Math.max(10_000_000, n * 4)} }\n`);
  const server = await startRedis();
  const redis = new Redis({ port: server.port, host: '127.0.0.1' });
  const queue = new FairQueue(redis);
  try {
    const before = await usedMemory(redis);
    await run(process.execPath, [cli, 'kickoff', seedPath, '--redis', server.url], { env: { ...process.env, WEIR_LOG_LEVEL: 'warn' } });
    const after = await usedMemory(redis);
    const bitmap = Number(await redis.strlen(queue.key('big', 'dedupe')));
    const listBytes = Number(await redis.memory('USAGE', crawlKeys('big', queue).domainList, 'SAMPLES', 1000));
    out(`Redis memory of ${n.toLocaleString('en-US')} domains with one URL queued each`, `${((after - before - bitmap) / n).toFixed(0)} B/domain`, `${((after - before) / 2 ** 20).toFixed(0)} MiB in all, of which the Bloom bitmap ${(bitmap / 2 ** 20).toFixed(0)} MiB and the domain list ${(listBytes / 2 ** 20).toFixed(0)} MiB (${(listBytes / n).toFixed(0)} B/domain)`);
    // 100 domains with a backlog, and some failures counted by workers' tallies.
    for (let i = 0; i < 100; i++) await queue.enqueue('big', site(i * 7919), Array.from({ length: 10 * (i + 1) }, (_, j) => `{"u":"https://www.${site(i * 7919)}/${j}"}`));
    for (let i = 0; i < 1000; i++) await redis.zincrby(crawlKeys('big', queue).errorDomains, 1 + (i % 13), site(i * 31));
    const base = ['status', seedPath, '--redis', server.url];
    const top = await timedCli(cli, base);
    out(`weir status, ${n.toLocaleString('en-US')} domains (the 50 biggest backlogs)`, `${top.median.toFixed(0)} ms`, `median of 5 (best ${top.best.toFixed(0)} ms), the whole command: node start-up, Redis, the table; ${top.stdout.split('\n').length} lines`);
    const errors = await timedCli(cli, [...base, '--by', 'errors', '--top', '500']);
    out('weir status --by errors --top 500', `${errors.median.toFixed(0)} ms`, `best ${errors.best.toFixed(0)} ms`);
    const one = await timedCli(cli, [...base, '--domain', site(n - 1)]);
    out('weir status --domain (one)', `${one.median.toFixed(0)} ms`, `best ${one.best.toFixed(0)} ms`);
    const json = await timedCli(cli, [...base, '--json']);
    out('weir status --json', `${json.median.toFixed(0)} ms`, `${(json.stdout.length / 1024).toFixed(0)} KiB of JSON`);
    const startup = await timedCli(cli, ['--help']);
    out('for scale: weir --help (node and the CLI starting)', `${startup.median.toFixed(0)} ms`, '');
    await pageBenchmarks(out, cli, seedPath, server.url, n);
    const { CrawlMetrics } = await loadMetrics();
    const metrics = new CrawlMetrics(queue, 'big', { redisEveryMs: 0 });
    const t = performance.now();
    const text = await metrics.registry.metrics();
    out('metrics endpoint body (one scrape, fresh read of Redis)', `${(text.length / 1024).toFixed(0)} KiB`, `${(performance.now() - t).toFixed(0)} ms; ${text.split('\n').filter((l) => l.startsWith('weir_domain_queued{')).length} weir_domain_queued series`);
  } finally {
    await queue.close();
    redis.disconnect();
    await server.destroy();
  }
}

/** The status page over the arena: its JSON view timed, and the page loaded and searched in Chromium. */
async function pageBenchmarks(out: Out, cli: string, seedPath: string, redisUrl: string, n: number): Promise<void> {
  const child = spawn(process.execPath, [cli, 'status', seedPath, '--redis', redisUrl, '--serve', '0'], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, WEIR_LOG_LEVEL: 'warn' } });
  try {
    let said = '';
    child.stdout.on('data', (d: Buffer) => (said += d.toString()));
    while (!/at (http:\/\/\S+\/) /.test(said)) await once(child.stdout, 'data');
    const url = /at (http:\/\/\S+\/) /.exec(said)?.[1] as string;
    const ms: number[] = [];
    for (let i = 0; i < 5; i++) {
      const t = performance.now();
      await (await fetch(`${url}api/view?sort=queued`)).json();
      ms.push(performance.now() - t);
      await new Promise((r) => setTimeout(r, 1100));
    }
    ms.sort((a, b) => a - b);
    out('status page: /api/view (a fresh read each second)', `${ms[2]?.toFixed(0)} ms`, `median of 5, best ${ms[0]?.toFixed(0)} ms`);
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      const t = performance.now();
      await page.goto(url);
      await page.waitForFunction(() => ((globalThis as unknown as { weirStatus: { refreshes: number } }).weirStatus.refreshes >= 1), undefined, { timeout: 60_000 });
      const drawn = performance.now() - t;
      const rows = await page.locator('#domains tbody tr').count();
      const target = site(n - 2);
      const s = performance.now();
      await page.fill('#search', target);
      await page.waitForFunction((d) => (globalThis as unknown as { weirStatus: { view?: { rows: { domain: string }[] } } }).weirStatus.view?.rows[0]?.domain === d, target, { timeout: 60_000 });
      out('status page in Chromium: first draw', `${drawn.toFixed(0)} ms`, `${rows} rows; a search for one domain of ${n.toLocaleString('en-US')} by its name answered in ${(performance.now() - s).toFixed(0)} ms`);
    } finally {
      await browser.close();
    }
  } finally {
    child.kill('SIGTERM');
    await once(child, 'exit');
  }
}
