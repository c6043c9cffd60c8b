/**
 * weir's programmatic API.
 *
 *   import { crawl, worker } from 'weir';
 *   const summary = await crawl('seeds/example.yaml', {
 *     redis: 'redis://127.0.0.1:6379',
 *     onPage: async ({ url, $ }) => { const doc = await $(); console.log(url, doc('h1').text()); },
 *   });
 */
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { kickoff, readStoredSeed, type KickoffResult } from './crawl/kickoff.js';
import { JsonlWriter } from './crawl/output.js';
import { loadSeedFile, validateSeed, type Seed } from './crawl/seed.js';
import { crawlStatus, type CrawlStatus } from './crawl/status.js';
import { CrawlWorker, WORKER_DEFAULTS, type OnPage, type WorkerSummary } from './crawl/worker.js';
import { connectRedis } from './redis.js';

export interface ApiOptions {
  /** A connected client (yours to close), or a Redis URL (default REDIS_URL, else redis://127.0.0.1:6379). */
  redis?: Redis | string;
  /** Fetches in flight per worker. */
  concurrency?: number;
  /** One JSON line per URL. crawl() truncates it; worker() appends. */
  out?: string;
  onPage?: OnPage;
  logger?: Logger;
  signal?: AbortSignal;
  leaseMs?: number;
}

async function open(redis: ApiOptions['redis']): Promise<{ client: Redis; owned: boolean }> {
  if (redis && typeof redis !== 'string') return { client: redis, owned: false };
  return { client: await connectRedis(redis ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'), owned: true };
}

async function seedOf(seed: Seed | string | Record<string, unknown>): Promise<Seed> {
  if (typeof seed === 'string') return loadSeedFile(seed);
  return 'productToken' in seed ? (seed as Seed) : validateSeed(seed);
}

/** Runs one worker (like `weir worker`) until the arena is drained (exitWhenDone, default true here), maxPages, or abort. */
export async function worker(seedInput: Seed | string | Record<string, unknown>, options: ApiOptions & { exitWhenDone?: boolean } = {}): Promise<WorkerSummary> {
  const seed = await seedOf(seedInput);
  const { client, owned } = await open(options.redis);
  const out = options.out ? new JsonlWriter(options.out) : undefined;
  try {
    // Use the arena's stored seed when there is one, as `weir worker` does.
    const effective = (await readStoredSeed(client, seed.arena)) ?? seed;
    const w = new CrawlWorker(client, effective, {
      concurrency: options.concurrency ?? WORKER_DEFAULTS.concurrency,
      exitWhenDone: options.exitWhenDone ?? true,
      ...(options.leaseMs ? { leaseMs: options.leaseMs } : {}),
      ...(out ? { out } : {}),
      ...(options.onPage ? { onPage: options.onPage } : {}),
      ...(options.logger ? { logger: options.logger } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    return await w.run();
  } finally {
    await out?.close();
    if (owned) client.disconnect();
  }
}

export interface CrawlSummary {
  kickoff: KickoffResult;
  workers: WorkerSummary[];
  status: CrawlStatus;
}

/**
 * Kickoff, then `workers` in-process workers (default 2; onPage is a
 * function, so they share this process — use `weir crawl` or more `weir
 * worker` processes to spread over cores and machines), until done.
 */
export async function crawl(seedInput: Seed | string | Record<string, unknown>, options: ApiOptions & { workers?: number } = {}): Promise<CrawlSummary> {
  const seed = await seedOf(seedInput);
  const { client, owned } = await open(options.redis);
  try {
    const k = await kickoff(client, seed);
    if (options.out) await new JsonlWriter(options.out, { truncate: true }).close();
    const workers = await Promise.all(
      Array.from({ length: options.workers ?? 2 }, () => worker(seed, { ...options, redis: client, exitWhenDone: true })),
    );
    return { kickoff: k, workers, status: await crawlStatus(client, seed.arena) };
  } finally {
    if (owned) client.disconnect();
  }
}

export { kickoff, crawlStatus, CrawlWorker, loadSeedFile, validateSeed };
export type { Seed, WorkerSummary, OnPage, CrawlStatus, KickoffResult };
export { SeedError, SEED_DEFAULTS } from './crawl/seed.js';
export { WORKER_DEFAULTS } from './crawl/worker.js';
export { ROBOTS } from './crawl/robots-cache.js';
export * as queue from './queue/index.js';
