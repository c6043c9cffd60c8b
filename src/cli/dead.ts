import type { DeadItem } from '../queue/index.js';
import { decodeItem } from '../crawl/store/index.js';
import type { CommandContext } from './context.js';
import { table } from './draw.js';
import { EXIT } from './exit.js';
import { withQueue } from './redis.js';

/** `weir dead SEED [--requeue] [--json]`. */
export async function cmdDead({ seed, url }: CommandContext, opts: { requeue: boolean; json: boolean }): Promise<number> {
  return withQueue(url, async (_redis, queue) => {
    const items: DeadItem[] = [];
    for (let offset = 0; ; offset += 1000) {
      const page = await queue.dead(seed.arena, { offset, count: 1000 });
      items.push(...page);
      if (page.length < 1000) break;
    }
    // Not a crawl item (written by something else): shown as it is.
    const rows = items.map((d) => ({ url: decodeItem(d.item)?.url ?? d.item, domain: d.queue, reason: d.reason, attempts: d.attempts, at: new Date(d.at).toISOString() }));
    if (opts.json) process.stdout.write(`${JSON.stringify(rows)}\n`);
    else if (rows.length === 0) process.stdout.write(`arena ${seed.arena}: the dead letter is empty\n`);
    else process.stdout.write(`${table(['url', 'domain', 'attempts', 'reason'], rows.map((r) => [r.url, r.domain, r.attempts, r.reason]))}\n`);
    if (opts.requeue && items.length > 0) {
      const n = await queue.requeueDead(seed.arena, items.length);
      process.stdout.write(`requeued ${n} URLs (start workers to crawl them)\n`);
    }
    return EXIT.ok;
  });
}
