import type { DeadItem } from '../queue/index.js';
import { decodeItem } from '../crawl/store/index.js';
import type { CommandContext } from './context.js';
import { table } from './draw.js';
import { EXIT } from './exit.js';
import { withQueue } from './redis.js';

/** Dead URLs listed at most by one `weir dead` (a page: --offset N for the next). */
export const DEAD_PAGE_MAX = 1000;

/**
 * `weir dead SEED [--limit N] [--offset N] [--json] [--requeue]`: a page
 * of the dead letter (oldest first; 100 by default), and how many there are
 * in all (a count the scripts keep: a dead letter of millions is never read
 * whole); --requeue re-drives every one.
 */
export async function cmdDead({ seed, url }: CommandContext, opts: { requeue: boolean; json: boolean; offset: number; limit: number }): Promise<number> {
  return withQueue(url, async (_redis, queue) => {
    const total = (await queue.stats(seed.arena)).dead;
    const items: DeadItem[] = opts.offset < total ? await queue.dead(seed.arena, { offset: opts.offset, count: Math.min(opts.limit, DEAD_PAGE_MAX) }) : [];
    // Not a crawl item (written by something else): shown as it is.
    const rows = items.map((d) => ({ url: decodeItem(d.item)?.url ?? d.item, domain: d.queue, reason: d.reason, attempts: d.attempts, at: new Date(d.at).toISOString() }));
    if (opts.json) process.stdout.write(`${JSON.stringify(rows)}\n`);
    else if (total === 0) process.stdout.write(`arena ${seed.arena}: the dead letter is empty\n`);
    else {
      const shown = rows.length === 0 ? `none at offset ${opts.offset}` : `${opts.offset + 1}-${opts.offset + rows.length}`;
      process.stdout.write(`arena ${seed.arena}: dead letter ${shown} of ${total}${opts.offset + rows.length < total ? ` (--offset ${opts.offset + rows.length} for the next)` : ''}\n`);
      if (rows.length > 0) process.stdout.write(`${table(['url', 'domain', 'attempts', 'reason'], rows.map((r) => [r.url, r.domain, r.attempts, r.reason]))}\n`);
    }
    if (opts.requeue && total > 0) {
      const n = await queue.requeueDead(seed.arena, total);
      process.stdout.write(`requeued ${n} URLs (start workers to crawl them)\n`);
    }
    return EXIT.ok;
  });
}
