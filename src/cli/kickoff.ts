import { setFlagsFromString } from 'node:v8';
import { kickoff } from '../crawl/kickoff.js';
import { connectRedis } from '../redis.js';
import type { CommandContext } from './context.js';
import { EXIT } from './exit.js';
import { FairQueue } from '../queue/index.js';
import { sayPlacement, warnEviction } from './redis.js';

/**
 * How far V8 lets the heap grow past what a collection kept before the next
 * one (1 + this / 100). Kickoff makes garbage steadily, a batch of URLs at a
 * time, over a small live set (about 30 MB): V8's own factor, up to 4,
 * let a kickoff of 10^6 start URLs peak at 260 MB resident; with 1.5 it
 * peaked near 160 MB in about the same time. With two batches truly in
 * flight (kickoff.ts) a kickoff over 10^6 new domains peaked at 184-185 MiB
 * with 1.5, 175-178 MiB with 1.35 (193-194 against 184-187 MB, the bound
 * being 200 MB), in the same wall time: that kickoff waits on Redis, so
 * its collector's extra work costs no time. V8 reads the flag at each
 * collection, so it can be set once running (a V8 without it ignores it).
 */
const KICKOFF_HEAP_GROWING_PERCENT = 35;

/** Before a kickoff (`weir kickoff`, and `weir crawl`'s own): the heap grows by KICKOFF_HEAP_GROWING_PERCENT between collections. */
export function keepKickoffHeapSmall(): void {
  setFlagsFromString(`--heap-growing-percent=${KICKOFF_HEAP_GROWING_PERCENT}`);
}

/** `weir kickoff SEED`. */
export async function cmdKickoff({ seed, url, log }: CommandContext): Promise<number> {
  keepKickoffHeapSmall();
  const redis = await connectRedis(url);
  await warnEviction(redis, log);
  const queue = new FairQueue(redis);
  try {
    const r = await kickoff(redis, seed, queue);
    log.info({ arena: seed.arena, ...r }, 'kickoff done');
    await sayPlacement(redis, queue, seed.arena, log);
    const listed = Array.isArray(seed.sitemaps) ? `, ${r.sitemapsEnqueued} of ${seed.sitemaps.length} listed sitemaps` : '';
    for (const bad of r.files.examples) log.warn({ line: bad }, 'start file: a bad line, skipped');
    for (const bad of r.domainFiles.examples) log.warn({ line: bad }, 'domain file: a bad line, skipped');
    const total = seed.start.length + r.files.urls;
    const enqueued = r.enqueued + r.files.enqueued;
    const files = seed.startFiles.length > 0 ? ` (${r.files.urls} from ${seed.startFiles.length} start file${seed.startFiles.length > 1 ? 's' : ''}${r.files.bad > 0 ? `, ${r.files.bad} bad lines skipped` : ''})` : '';
    const news = enqueued === 0 && total > 0 ? 'nothing new: every start URL was queued or seen before' : `${enqueued} start URLs enqueued (${total - enqueued} already seen)`;
    const d = r.domainFiles;
    const fromFiles = seed.domainFiles.length > 0 ? ` (${d.domains} from ${seed.domainFiles.length} domain file${seed.domainFiles.length > 1 ? 's' : ''}${d.bad > 0 ? `, ${d.bad} bad lines skipped` : ''})` : '';
    const defaulted = d.defaulted > 0 ? `, ${d.defaulted} more at the default rate` : '';
    process.stdout.write(`arena ${seed.arena}: ${Object.keys(seed.rateLimits).length + d.domains} domains${fromFiles}${defaulted}, ${news}${files}${listed}\n`);
    return EXIT.ok;
  } finally {
    await queue.close();
    redis.disconnect();
  }
}
