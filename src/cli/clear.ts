import type { CommandContext } from './context.js';
import { EXIT } from './exit.js';
import { withQueue } from './redis.js';
import { UsageError } from './usage.js';

/** `weir clear SEED --yes`: every key of the arena, the queue's and the crawler's. */
export async function cmdClear({ seed, url }: CommandContext, yes: boolean): Promise<number> {
  if (!yes) throw new UsageError(`clear deletes every key of arena ${seed.arena}: add --yes to do it`);
  return withQueue(url, async (_redis, queue) => {
    const n = await queue.clear(seed.arena);
    process.stdout.write(`arena ${seed.arena}: deleted ${n} keys\n`);
    return EXIT.ok;
  });
}
