import { kickoff } from '../crawl/kickoff.js';
import { connectRedis } from '../redis.js';
import type { CommandContext } from './context.js';
import { EXIT } from './exit.js';
import { FairQueue } from '../queue/index.js';
import { sayPlacement, warnEviction } from './redis.js';

/** `weir kickoff SEED`. */
export async function cmdKickoff({ seed, url, log }: CommandContext): Promise<number> {
  const redis = await connectRedis(url);
  await warnEviction(redis, log);
  const queue = new FairQueue(redis);
  try {
    const r = await kickoff(redis, seed, queue);
    log.info({ arena: seed.arena, ...r }, 'kickoff done');
    await sayPlacement(redis, queue, seed.arena, log);
    const listed = Array.isArray(seed.sitemaps) ? `, ${r.sitemapsEnqueued} of ${seed.sitemaps.length} listed sitemaps` : '';
    process.stdout.write(`arena ${seed.arena}: ${Object.keys(seed.rateLimits).length} domains, ${r.enqueued} start URLs enqueued (${seed.start.length - r.enqueued} already seen)${listed}\n`);
    return EXIT.ok;
  } finally {
    await queue.close();
    redis.disconnect();
  }
}
