/**
 * Kickoff from start files (BENCH_PART=kickoff of npm run bench:crawl):
 * BENCH_KICKOFF_URLS (default 1,000,000) start URLs over 1,000 domains in
 * one gzipped file, kicked off by the built `weir kickoff` (dist/cli.js)
 * under /usr/bin/time: URLs queued per second (wall), the process's peak
 * resident memory, and the same for a second kickoff of the same seed
 * (which finds every URL seen and queues nothing). One redis-server of its own.
 */
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { Redis } from 'ioredis';
import { FairQueue } from '../src/queue/index.js';
import { startRedis } from '../test/helpers/redis.js';
import { builtCli } from './cpu.js';

type Out = (name: string, value: string, note?: string) => void;

const run = promisify(execFile);
const DOMAINS = 1000;

/** `weir kickoff` under /usr/bin/time: wall seconds and peak RSS in MiB, and what it printed. */
async function kickoffTimed(cli: string, seedPath: string, redisUrl: string): Promise<{ secs: number; rssMiB: number; said: string }> {
  const { stdout, stderr } = await run('/usr/bin/time', ['-f', 'TIME %e %M', process.execPath, cli, 'kickoff', seedPath, '--redis', redisUrl], { maxBuffer: 64 * 1024 * 1024, env: { ...process.env, WEIR_LOG_LEVEL: 'warn' } });
  const m = /TIME ([\d.]+) (\d+)/.exec(stderr);
  return { secs: Number(m?.[1]), rssMiB: Number(m?.[2]) / 1024, said: stdout.trim() };
}

export async function kickoffFileBenchmarks(out: Out, dir: string): Promise<void> {
  const n = Number(process.env.BENCH_KICKOFF_URLS ?? 1_000_000);
  const cli = builtCli();
  const domain = (i: number): string => `www.site-${String(i % DOMAINS).padStart(4, '0')}.example`;
  const lines: string[] = [];
  for (let i = 0; i < n; i++) lines.push(`https://${domain(i)}/articles/${String(i).padStart(8, '0')}.html`);
  const file = join(dir, 'start.txt.gz');
  await writeFile(file, gzipSync(lines.join('\n')));
  lines.length = 0;
  const seedPath = join(dir, 'kickoff.yaml');
  const rateLimits = Object.fromEntries(Array.from({ length: DOMAINS }, (_, d) => [domain(d), 1]));
  await writeFile(seedPath, `arena: kickoff-bench\nrateLimits: ${JSON.stringify(rateLimits)}\nstartFiles: [start.txt.gz]\nbloom: { expectedUrls: ${Math.max(10_000_000, n * 2)} }\n`);
  const server = await startRedis();
  const redis = new Redis({ port: server.port, host: '127.0.0.1' });
  try {
    const first = await kickoffTimed(cli, seedPath, server.url);
    const queued = (await new FairQueue(redis).stats('kickoff-bench')).queued;
    out(`kickoff of ${n.toLocaleString('en-US')} start URLs from a gzipped file (${DOMAINS} domains)`, `${Math.round(n / first.secs).toLocaleString('en-US')} URLs/s`, `${first.secs.toFixed(1)} s wall, peak RSS ${first.rssMiB.toFixed(0)} MiB; ${queued.toLocaleString('en-US')} queued`);
    const second = await kickoffTimed(cli, seedPath, server.url);
    out('the same kickoff again', `${Math.round(n / second.secs).toLocaleString('en-US')} URLs/s`, `${second.secs.toFixed(1)} s, peak RSS ${second.rssMiB.toFixed(0)} MiB; said: ${second.said}`);
  } finally {
    redis.disconnect();
    await server.destroy();
  }
}
