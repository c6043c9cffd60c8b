import { crawlStats } from '../crawl/stats.js';
import { sleep } from '../queue/index.js';
import type { CommandContext } from './context.js';
import { formatStats } from './draw.js';
import { EXIT } from './exit.js';
import { withQueue } from './redis.js';

/** `weir status SEED [--json] [--watch]`. */
export async function cmdStatus({ seed, url }: CommandContext, opts: { json: boolean; watch: boolean }): Promise<number> {
  return withQueue(url, async (redis, queue) => {
    for (;;) {
      const s = await crawlStats(redis, seed.arena, queue);
      if (opts.watch && process.stdout.isTTY) process.stdout.write('\x1b[H\x1b[2J');
      process.stdout.write(`${opts.json ? JSON.stringify(s) : formatStats(s)}\n`);
      if (!opts.watch) return EXIT.ok;
      await sleep(1000);
    }
  });
}
