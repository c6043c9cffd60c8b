import { crawlStats, type StatsView } from '../crawl/counters/index.js';
import { type FairQueue } from '../queue/index.js';
import { sleep } from '../sleep.js';
import { redactRedisUrl, type RedisClient } from '../redis.js';
import { serveStatus } from '../status/server.js';
import { StatusSource } from '../status/source.js';
import type { CommandContext } from './context.js';
import { formatStats } from './draw.js';
import { EXIT } from './exit.js';
import { withQueue } from './redis.js';

export interface StatusFlags {
  json: boolean;
  watch: boolean;
  /** --serve PORT: the live page instead of a table. */
  serve?: number;
  host: string;
  /** Which domains the table shows (crawl/counters/stats.ts StatsView). */
  view?: StatsView;
}

/** `weir status SEED [--json] [--watch] [--serve PORT [--host H]]`. */
export async function cmdStatus(ctx: CommandContext, opts: StatusFlags): Promise<number> {
  return withQueue(ctx.url, async (redis, queue) => {
    if (opts.serve !== undefined) return servePage(ctx, redis, queue, opts.serve, opts.host);
    for (;;) {
      const s = await crawlStats(redis, ctx.seed.arena, queue, opts.view);
      if (opts.watch && process.stdout.isTTY) process.stdout.write('\x1b[H\x1b[2J');
      process.stdout.write(`${opts.json ? JSON.stringify(s) : formatStats(s)}\n`);
      if (!opts.watch) return EXIT.ok;
      await sleep(1000);
    }
  });
}

/** Serves the page until SIGINT or SIGTERM. */
async function servePage(ctx: CommandContext, redis: RedisClient, queue: FairQueue, port: number, host: string): Promise<number> {
  const page = await serveStatus(new StatusSource(redis, queue, ctx.seed.arena, redactRedisUrl(ctx.url)), { host, port, log: ctx.log });
  process.stdout.write(`weir status: live page of arena ${ctx.seed.arena} at ${page.url} (read-only; JSON at ${page.url}api/status; Ctrl-C to stop)\n`);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await page.close();
  return EXIT.ok;
}
