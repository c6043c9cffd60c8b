/**
 * Running a crawl, the one way the command line, the programmatic API and
 * the tests all do it: the stored-seed policy, one worker, and kickoff plus
 * workers in this process.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import { FairQueue, QueueArgumentError, type RedisClient } from '../queue/index.js';
import { sleep } from '../sleep.js';
import { CrawlLock } from './store/index.js';
import { kickoff, readStoredSeed, type KickoffResult } from './kickoff.js';
import { JsonlWriter } from './output/index.js';
import { storableSeed, type Seed } from './seed/index.js';
import { crawlStats, type CrawlStats } from './counters/index.js';
import type { WorkerOptions, WorkerSummary } from './worker-options.js';
import type { LookupFunction } from './fetch/index.js';

/** How often a worker started before kickoff looks for the stored seed. */
const KICKOFF_POLL_MS = 500;

/**
 * The seed a worker crawls with: the copy kickoff stored in the arena, so
 * every worker agrees whatever file it was started with. Waits for kickoff
 * when there is none yet (saying so once); warns when the local seed differs
 * from the stored one. Resolves null when `signal` aborts first.
 */
export async function storedSeed(redis: RedisClient, local: Seed, options: { log?: Logger | undefined; signal?: AbortSignal | undefined } = {}): Promise<Seed | null> {
  const queue = new FairQueue(redis);
  let waiting = false;
  while (!options.signal?.aborted) {
    const stored = await readStoredSeed(redis, local.arena, queue);
    if (stored) {
      // The one difference that is not a warning: a worker sure of another shard count than the arena's.
      const { shards } = await queue.layout(local.arena);
      if (local.shards !== null && local.shards !== shards) {
        throw new QueueArgumentError('WEIR_SHARDS_MISMATCH', `arena ${local.arena} has ${shards} shard${shards === 1 ? '' : 's'} (fixed at its first kickoff); this seed file says shards: ${local.shards}: drop the field or make it ${shards}`);
      }
      if (!isDeepStrictEqual(storableSeed(stored), storableSeed(local))) {
        options.log?.warn({ arena: local.arena }, 'the seed file differs from the one kickoff stored in the arena: using the stored one');
      }
      return stored;
    }
    if (!waiting) options.log?.info({ arena: local.arena }, 'waiting for kickoff of this arena');
    waiting = true;
    await sleep(KICKOFF_POLL_MS, options.signal);
  }
  return null;
}

/** One worker on the arena's stored seed, until drained (exitWhenDone), maxPages, or abort. */
export async function runWorker(redis: RedisClient, local: Seed, options: WorkerOptions = {}): Promise<WorkerSummary> {
  const seed = await storedSeed(redis, local, { log: options.logger, signal: options.signal });
  if (!seed) return { pages: 0, errors: 0, robotsBlocked: 0, redirects: 0, enqueued: 0, malformedUrls: 0, released: 0, dequeues: 0, emptyDequeues: 0, wakeups: 0, exitReason: 'stopped' };
  // (Loaded here: `weir crawl`'s own process starts the crawl and never loads the fetching side.)
  const { CrawlWorker } = await import('./worker.js');
  return new CrawlWorker(redis, seed, options).run();
}

export interface CrawlResult {
  kickoff: KickoffResult;
  workers: WorkerSummary[];
  stats: CrawlStats;
}

/**
 * A crawl's start, the same for `weir crawl` and crawl(): the arena's lock
 * taken before anything is written (one crawl drives an arena; the caller
 * releases it), kickoff, and whether the arena was drained already with
 * nothing new to crawl; else the output file is truncated.
 */
export async function startCrawl(redis: RedisClient, seed: Seed, queue: FairQueue, out?: string, lookup?: LookupFunction): Promise<{ lock: CrawlLock; kickoff: KickoffResult; alreadyDrained: boolean }> {
  const lock = await CrawlLock.acquire(redis, queue, seed.arena);
  try {
    const before = await queue.stats(seed.arena);
    const k = await kickoff(redis, seed, queue, { lookup });
    const alreadyDrained = before.exists && k.enqueued + k.files.enqueued === 0 && (await queue.stats(seed.arena)).drained;
    if (out !== undefined && !alreadyDrained) await new JsonlWriter(out, { truncate: true }).close();
    return { lock, kickoff: k, alreadyDrained };
  } catch (err) {
    await lock.release();
    throw err;
  }
}

/**
 * startCrawl, then `workers` workers in this process until the arena is
 * drained (or maxPages), sharing the output file.
 */
export async function runCrawl(redis: RedisClient, seed: Seed, options: Omit<WorkerOptions, 'out' | 'exitWhenDone'> & { workers: number; out?: string }): Promise<CrawlResult> {
  const queue = new FairQueue(redis);
  const { lock, kickoff: k } = await startCrawl(redis, seed, queue, options.out, options.lookup);
  let out: JsonlWriter | undefined;
  try {
    out = options.out ? new JsonlWriter(options.out) : undefined;
    const { workers, out: _path, ...workerOptions } = options;
    const summaries = await Promise.all(
      Array.from({ length: workers }, () => runWorker(redis, seed, { ...workerOptions, exitWhenDone: true, ...(out ? { out } : {}) })),
    );
    return { kickoff: k, workers: summaries, stats: await crawlStats(redis, seed.arena, queue) };
  } finally {
    await out?.close();
    await lock.release();
    await queue.close();
  }
}
