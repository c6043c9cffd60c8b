import type { CommandContext } from './context.js';
import { EXIT } from './exit.js';
import { withQueue } from './redis.js';
import { UsageError } from './usage.js';
import { isWeirError } from '../errors.js';
import { hasDomainList } from '../crawl/seed/index.js';

/** `weir hold SEED [DOMAIN]` and `weir unhold SEED [DOMAIN]`. */
export async function cmdHold({ seed, url }: CommandContext, hold: boolean, domain: string | undefined): Promise<number> {
  // With perServer the queues are servers ('@<address>'), found as the crawl goes: the queue says whether it has one.
  if (seed.perServer && domain !== undefined && !domain.startsWith('@')) {
    throw new UsageError(`${seed.arena} keeps its limits per server (perServer): hold a server's queue, @<address> as weir status lists them, not ${domain}`);
  }
  // (An outward crawl's domains, and those of domain lists, are its queues, found as it goes: the queue says whether it has one.)
  if (domain !== undefined && !seed.perServer && !Object.hasOwn(seed.rateLimits, domain) && !seed.otherDomains && !hasDomainList(seed)) {
    throw new UsageError(`${domain} is not a domain of ${seed.arena} (domains: ${Object.keys(seed.rateLimits).join(', ')})`);
  }
  return withQueue(url, async (_redis, queue) => {
    try {
      if (hold) await queue.hold(seed.arena, domain);
      else await queue.unhold(seed.arena, domain);
    } catch (err) {
      if (isWeirError(err, 'WEIR_UNKNOWN_QUEUE')) throw new UsageError(`${domain ?? ''} is not a domain of ${seed.arena}: neither in its rateLimits nor found by its crawl so far`);
      throw err;
    }
    process.stdout.write(`${hold ? 'held' : 'released the hold on'} ${domain ?? `the whole arena ${seed.arena}`}${hold ? ': no dequeues until unhold; leases out are untouched' : ''}\n`);
    return EXIT.ok;
  });
}
