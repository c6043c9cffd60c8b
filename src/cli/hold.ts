import type { CommandContext } from './context.js';
import { EXIT } from './exit.js';
import { withQueue } from './redis.js';
import { UsageError } from './usage.js';

/** `weir hold SEED [DOMAIN]` and `weir unhold SEED [DOMAIN]`. */
export async function cmdHold({ seed, url }: CommandContext, hold: boolean, domain: string | undefined): Promise<number> {
  if (domain !== undefined && !Object.hasOwn(seed.rateLimits, domain)) {
    throw new UsageError(`${domain} is not a domain of ${seed.arena} (domains: ${Object.keys(seed.rateLimits).join(', ')})`);
  }
  return withQueue(url, async (_redis, queue) => {
    if (hold) await queue.hold(seed.arena, domain);
    else await queue.unhold(seed.arena, domain);
    process.stdout.write(`${hold ? 'held' : 'released the hold on'} ${domain ?? `the whole arena ${seed.arena}`}${hold ? ': no dequeues until unhold; leases out are untouched' : ''}\n`);
    return EXIT.ok;
  });
}
