import { mkdirSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import { loadSeedFile, storableSeed } from '../crawl/seed/index.js';
import { startDemoWeb } from '../demo/web.js';
import { FairQueue } from '../queue/index.js';
import { connectRedis, redactRedisUrl } from '../redis.js';
import { serveStatus, type StatusServer } from '../status/server.js';
import { StatusSource } from '../status/source.js';
import { cmdCrawl } from './crawl.js';
import { pickRedis } from './redis.js';

/** The demo's seed, shipped in the package. */
export const DEMO_SEED = fileURLToPath(new URL('../../seeds/demo.yaml', import.meta.url));

/**
 * `weir demo` / `npm run demo`: starts the bundled demo web on loopback and
 * crawls it with `seeds/demo.yaml` in a fresh arena (demo-<time>) with two
 * worker processes, showing progress and ending with a summary table and
 * where the output is. Nothing leaves 127.0.0.1.
 */
export async function cmdDemo(opts: { redisFlag: string | undefined; workers: number; log: Logger; logFormat: string }): Promise<number> {
  const web = await startDemoWeb();
  let page: Awaited<ReturnType<typeof watchPage>> | undefined;
  try {
    const redis = await pickRedis(opts.redisFlag);
    process.stdout.write(`${redis.said}\n`);
    // The demo's workers log warnings only: the progress line and the summary tell the story.
    process.env.WEIR_LOG_LEVEL ??= 'warn';
    const base = await loadSeedFile(DEMO_SEED);
    const arena = `demo-${new Date().toISOString().replace(/[-:]/g, '').replace(/\..*$/, '').replace('T', '-')}-${process.pid}`;
    const dir = resolve('.weir');
    mkdirSync(dir, { recursive: true });
    // JSON is YAML: the per-run seed is the demo seed with a fresh arena.
    const seedPath = join(dir, 'demo-seed.json');
    const seed = { ...base, arena };
    writeFileSync(seedPath, JSON.stringify(storableSeed(seed), null, 2));
    const out = join(dir, 'demo-output.jsonl');
    page = await watchPage(redis.url, arena);
    process.stdout.write(`open ${page.url} to watch\n`);
    process.stdout.write(`weir demo: crawling the bundled demo web (${Object.values(web.origins).join(', ')}) in arena ${arena} with ${opts.workers} workers\n`);
    const code = await cmdCrawl(
      { seedPath, seed, url: redis.url, log: opts.log.child({}, { level: process.env.WEIR_LOG_LEVEL }) },
      { workers: opts.workers, concurrency: 8, out, workerArgs: ['--log-format', opts.logFormat] },
    );
    process.stdout.write(`output: ${relative(process.cwd(), out)} (one JSON line per URL); status: weir status ${relative(process.cwd(), seedPath)}\n`);
    await page.keepOpen();
    return code;
  } finally {
    await page?.close();
    await web.close();
  }
}

/**
 * The status page of the demo's arena on a free loopback port. On a terminal
 * it stays up after the crawl (its charts fill in as the last buckets close)
 * until Enter or Ctrl-C; otherwise the demo ends with the crawl.
 */
async function watchPage(url: string, arena: string): Promise<StatusServer & { keepOpen(): Promise<void> }> {
  const redis = await connectRedis(url);
  const queue = new FairQueue(redis);
  const server = await serveStatus(new StatusSource(redis, queue, arena, redactRedisUrl(url)), { host: '127.0.0.1', port: 0 });
  return {
    url: server.url,
    keepOpen: async () => {
      if (!process.stdin.isTTY || !process.stdout.isTTY) return;
      process.stdout.write(`the status page stays up at ${server.url}: press Enter (or Ctrl-C) to end the demo\n`);
      await new Promise<void>((resolve) => {
        process.stdin.once('data', () => resolve());
        process.once('SIGINT', () => resolve());
      });
      process.stdin.pause();
    },
    close: async () => {
      await server.close();
      await queue.close();
      redis.disconnect();
    },
  };
}
