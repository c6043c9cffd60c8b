/**
 * Kickoff from start files (BENCH_PART=kickoff of npm run bench:crawl):
 * BENCH_KICKOFF_URLS (n, default 1,000,000) start URLs in one gzipped file,
 * over 1,000 domains inline, over n domains listed in a domain file (one
 * URL each), and over n domains no list names (at defaultRate); each kicked off by the built `weir kickoff` (dist/cli.js)
 * under /usr/bin/time: URLs queued per second (wall), the process's peak
 * resident memory, and the same for a second kickoff of the same seed
 * (which finds every URL seen and queues nothing). One redis-server of its
 * own each, its CPU (INFO cpu) a URL beside. Then the floor of the last
 * case: the seed design's scripts (bench/seed-design.ts) kicked off from
 * the same file by the least client there is: lines read, each URL's host
 * cut out as its queue, define_rate_limits and the seed design's enqueue
 * for each, 10,000 URLs at a time, two batches in flight as weir's kickoff.
 */
import { execFile } from 'node:child_process';
import { createReadStream, createWriteStream } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { once } from 'node:events';
import { pipeline } from 'node:stream/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createGunzip, createGzip } from 'node:zlib';
import { Redis } from 'ioredis';
import { FairQueue } from '../src/queue/index.js';
import { startRedis } from '../test/helpers/redis.js';
import { builtCli } from './cpu.js';
import { SeedDesignQueue } from './seed-design.js';

type Out = (name: string, value: string, note?: string) => void;

const run = promisify(execFile);
const DOMAINS = 1000;

/** `weir kickoff` under /usr/bin/time: wall seconds and peak RSS in MiB, and what it printed. */
async function kickoffTimed(cli: string, seedPath: string, redisUrl: string): Promise<{ secs: number; rssMiB: number; said: string }> {
  const { stdout, stderr } = await run('/usr/bin/time', ['-f', 'TIME %e %M', process.execPath, cli, 'kickoff', seedPath, '--redis', redisUrl], { maxBuffer: 64 * 1024 * 1024, env: { ...process.env, WEIR_LOG_LEVEL: 'warn' } });
  const m = /TIME ([\d.]+) (\d+)/.exec(stderr);
  return { secs: Number(m?.[1]), rssMiB: Number(m?.[2]) / 1024, said: stdout.trim() };
}

/** Writes a gzipped file of `n` lines made by `line`, without holding them all as one string. */
export async function writeGzLines(file: string, n: number, line: (i: number) => string): Promise<void> {
  const gz = createGzip();
  const done = pipeline(gz, createWriteStream(file));
  for (let i = 0; i < n; i += 10_000) {
    const chunk: string[] = [];
    for (let j = i; j < Math.min(n, i + 10_000); j++) chunk.push(line(j));
    if (!gz.write(`${chunk.join('\n')}\n`)) await once(gz, 'drain');
  }
  gz.end();
  await done;
}

/** A Redis's CPU seconds so far (main thread, user + sys). */
async function redisCpu(redis: Redis): Promise<number> {
  const info = await redis.info('cpu');
  return Number(/used_cpu_user:([\d.]+)/.exec(info)?.[1]) + Number(/used_cpu_sys:([\d.]+)/.exec(info)?.[1]);
}

/** One kickoff case: the seed written, kicked off twice against a Redis of its own. Returns the first kickoff's URLs/s. */
async function kickoffCase(out: Out, cli: string, label: string, seedPath: string, arena: string, n: number): Promise<number> {
  const server = await startRedis();
  const redis = new Redis({ port: server.port, host: '127.0.0.1' });
  try {
    const cpu0 = await redisCpu(redis);
    const first = await kickoffTimed(cli, seedPath, server.url);
    const cpuUs = ((await redisCpu(redis)) - cpu0) * 1e6;
    const queued = (await new FairQueue(redis).stats(arena)).queued;
    out(`kickoff of ${n.toLocaleString('en-US')} start URLs from a gzipped file (${label})`, `${Math.round(n / first.secs).toLocaleString('en-US')} URLs/s`, `${first.secs.toFixed(1)} s wall, peak RSS ${first.rssMiB.toFixed(0)} MiB; ${queued.toLocaleString('en-US')} queued; Redis CPU ${(cpuUs / n).toFixed(1)} µs a URL`);
    const second = await kickoffTimed(cli, seedPath, server.url);
    out('the same kickoff again', `${Math.round(n / second.secs).toLocaleString('en-US')} URLs/s`, `${second.secs.toFixed(1)} s, peak RSS ${second.rssMiB.toFixed(0)} MiB; said: ${second.said}`);
    return n / first.secs;
  } finally {
    redis.disconnect();
    await server.destroy();
  }
}

/** A gzipped file's lines, `size` at a time (the floor's reader: chunks split at newlines, nothing else). */
async function* gzLineBatches(file: string, size: number): AsyncGenerator<string[]> {
  let rest = '';
  let batch: string[] = [];
  for await (const chunk of createReadStream(file).pipe(createGunzip())) {
    const lines = (rest + (chunk as Buffer).toString('utf8')).split('\n');
    rest = lines.pop() ?? '';
    for (const line of lines) {
      if (line === '') continue;
      batch.push(line);
      if (batch.length >= size) {
        yield batch;
        batch = [];
      }
    }
  }
  if (rest !== '') batch.push(rest);
  if (batch.length > 0) yield batch;
}

/**
 * The seed design's scripts kicked off from `file` (one URL a line, each of
 * a domain of its own): each URL's host its queue, define_rate_limits for a
 * batch's queues, then its enqueue script for each URL, all of a batch sent
 * at once, two batches in flight. Its URLs/s and Redis CPU a URL.
 */
async function seedDesignKickoff(file: string, n: number): Promise<{ rate: number; cpuUs: number }> {
  const server = await startRedis();
  const redis = new Redis({ port: server.port, host: '127.0.0.1' });
  try {
    const seed = new SeedDesignQueue(redis);
    const cpu0 = await redisCpu(redis);
    const t0 = performance.now();
    const writing: Promise<unknown>[] = [];
    for await (const urls of gzLineBatches(file, 10_000)) {
      const hosts = urls.map((u) => u.slice(u.indexOf('//') + 2, u.indexOf('/', u.indexOf('//') + 2)));
      const batch = (async () => {
        await seed.defineRateLimits('floor', Object.fromEntries(hosts.map((h) => [h, 1])));
        await Promise.all(urls.map((u, i) => seed.enqueue('floor', hosts[i] as string, u)));
      })();
      batch.catch(() => undefined);
      writing.push(batch);
      if (writing.length >= 2) await writing.shift();
    }
    await Promise.all(writing);
    const secs = (performance.now() - t0) / 1000;
    return { rate: n / secs, cpuUs: (((await redisCpu(redis)) - cpu0) * 1e6) / n };
  } finally {
    redis.disconnect();
    await server.destroy();
  }
}

export async function kickoffFileBenchmarks(out: Out, dir: string): Promise<void> {
  const n = Number(process.env.BENCH_KICKOFF_URLS ?? 1_000_000);
  const cli = builtCli();
  const bloom = `bloom: { expectedUrls: ${Math.max(10_000_000, n * 2)} }`;
  // 1,000 domains inline, n URLs over them.
  const domain = (i: number): string => `www.site-${String(i % DOMAINS).padStart(4, '0')}.example`;
  await writeGzLines(join(dir, 'start.txt.gz'), n, (i) => `https://${domain(i)}/articles/${String(i).padStart(8, '0')}.html`);
  const rateLimits = Object.fromEntries(Array.from({ length: DOMAINS }, (_, d) => [domain(d), 1]));
  await writeFile(join(dir, 'kickoff.yaml'), `arena: kickoff-bench\nrateLimits: ${JSON.stringify(rateLimits)}\nstartFiles: [start.txt.gz]\n${bloom}\n`);
  await kickoffCase(out, cli, `${DOMAINS} domains inline`, join(dir, 'kickoff.yaml'), 'kickoff-bench', n);
  // n domains, each listed in a domain file with its own rate, one URL each (a top-sites list).
  const site = (i: number): string => `site-${String(i).padStart(7, '0')}.example`;
  await writeGzLines(join(dir, 'domains.csv.gz'), n, (i) => `${site(i)},${1 + (i % 4)},${1 + (i % 2)}`);
  await writeGzLines(join(dir, 'tops.txt.gz'), n, (i) => `https://www.${site(i)}/`);
  await writeFile(join(dir, 'tops.yaml'), `arena: kickoff-tops\ndomainFiles: [domains.csv.gz]\nstartFiles: [tops.txt.gz]\n${bloom}\n`);
  await kickoffCase(out, cli, `${n.toLocaleString('en-US')} domains from a domain file`, join(dir, 'tops.yaml'), 'kickoff-tops', n);
  // n domains no list names, each joining at defaultRate.
  await writeFile(join(dir, 'defaults.yaml'), `arena: kickoff-defaults\ndefaultRate: 1\nstartFiles: [tops.txt.gz]\n${bloom}\n`);
  const weir = await kickoffCase(out, cli, `${n.toLocaleString('en-US')} domains at defaultRate`, join(dir, 'defaults.yaml'), 'kickoff-defaults', n);
  // The floor beside it: the seed design's scripts, the same file, no dedupe, no leases, no domain list.
  const floor = await seedDesignKickoff(join(dir, 'tops.txt.gz'), n);
  out(
    `floor: the seed design's scripts, the same ${n.toLocaleString('en-US')} URLs over as many new domains`,
    `${Math.round(floor.rate).toLocaleString('en-US')} URLs/s`,
    `Redis CPU ${floor.cpuUs.toFixed(1)} µs a URL; weir at defaultRate ÷ it: ${(weir / floor.rate).toFixed(2)}`,
  );
}
