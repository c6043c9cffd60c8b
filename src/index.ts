/**
 * weir's programmatic API.
 *
 *   import { crawl, worker } from 'weir';
 *   const result = await crawl('seeds/example.yaml', {
 *     redis: 'redis://127.0.0.1:6379',
 *     onPage: async ({ url, $ }) => { const doc = await $(); console.log(url, doc('h1').text()); },
 *   });
 */
import { type RedisClient, connectRedis } from './redis.js';
import type { Logger } from 'pino';
import { kickoff, type KickoffResult } from './crawl/kickoff.js';
import { JsonlWriter } from './crawl/output/index.js';
import { runCrawl, runWorker, type CrawlResult } from './crawl/run.js';
import { loadSeedFile, validateSeed, type Seed } from './crawl/seed/index.js';
import { crawlStats, type CrawlStats, type StatsView } from './crawl/counters/index.js';
import { CrawlWorker, WORKER_DEFAULTS, type OnPage, type WorkerSummary } from './crawl/worker.js';
import { MIN_LEASE_MS } from './crawl/worker-options.js';
import { WeirError } from './errors.js';
import { LIMITS } from './queue/index.js';

export interface ApiOptions {
  /** A connected client (yours to close), or a Redis URL (default REDIS_URL, else redis://127.0.0.1:6379). */
  redis?: RedisClient | string;
  /** Fetches in flight per worker. */
  concurrency?: number;
  /** One JSON line per URL. crawl() truncates it; worker() appends. */
  out?: string;
  onPage?: OnPage;
  logger?: Logger;
  signal?: AbortSignal;
  leaseMs?: number;
  /** Most ms a queue call waits for the worker's next to share its script call (default 5; 0: off). */
  lingerMs?: number;
  /** Leases of domains without a rate a take may bring for the worker's next lanes (default 4; 0: off). */
  spareLeases?: number;
  /** Keep every request and response in WARC/1.1 files in `dir` (each worker its own files; a new one past `maxBytes`, default 1 GiB). */
  warc?: { dir: string; maxBytes?: number };
}

async function open(redis: ApiOptions['redis']): Promise<{ client: RedisClient; owned: boolean }> {
  if (redis && typeof redis !== 'string') return { client: redis, owned: false };
  return { client: await connectRedis(redis ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'), owned: true };
}

async function seedOf(seed: Seed | string | Record<string, unknown>): Promise<Seed> {
  if (typeof seed === 'string') return loadSeedFile(seed);
  // Validated every time, also a Seed from validateSeed: an object that only
  // looks like one (or one changed since) must not pass unchecked. Its derived
  // field is derived again.
  const { productToken: _derived, ...fields } = seed as Record<string, unknown>;
  return validateSeed(fields);
}

function workerOptions(options: ApiOptions) {
  if (options.leaseMs !== undefined && !(Number.isInteger(options.leaseMs) && options.leaseMs >= MIN_LEASE_MS && options.leaseMs <= LIMITS.maxLeaseMs)) {
    throw new WeirError('WEIR_BAD_ARGS', `leaseMs must be a whole number of ms from ${MIN_LEASE_MS} to ${LIMITS.maxLeaseMs}, got ${String(options.leaseMs)}`);
  }
  return {
    concurrency: options.concurrency ?? WORKER_DEFAULTS.concurrency,
    ...(options.leaseMs !== undefined ? { leaseMs: options.leaseMs } : {}),
    ...(options.lingerMs !== undefined ? { lingerMs: options.lingerMs } : {}),
    ...(options.spareLeases !== undefined ? { spareLeases: options.spareLeases } : {}),
    ...(options.onPage ? { onPage: options.onPage } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.warc ? { warc: options.warc } : {}),
  };
}

/**
 * Runs one worker (like `weir worker`) on the arena's stored seed (waiting
 * for kickoff if there is none yet) until the arena is drained
 * (exitWhenDone, default true here), maxPages, or abort.
 */
export async function worker(seedInput: Seed | string | Record<string, unknown>, options: ApiOptions & { exitWhenDone?: boolean } = {}): Promise<WorkerSummary> {
  const seed = await seedOf(seedInput);
  const settings = workerOptions(options);
  const { client, owned } = await open(options.redis);
  const out = options.out ? new JsonlWriter(options.out) : undefined;
  try {
    return await runWorker(client, seed, { ...settings, exitWhenDone: options.exitWhenDone ?? true, ...(out ? { out } : {}) });
  } finally {
    await out?.close();
    if (owned) client.disconnect();
  }
}

/**
 * Kickoff, then `workers` in-process workers (default 2; onPage is a
 * function, so they share this process — use `weir crawl` or more `weir
 * worker` processes to spread over cores and machines), until done.
 */
export async function crawl(seedInput: Seed | string | Record<string, unknown>, options: ApiOptions & { workers?: number } = {}): Promise<CrawlResult> {
  const seed = await seedOf(seedInput);
  const settings = workerOptions(options);
  const { client, owned } = await open(options.redis);
  try {
    return await runCrawl(client, seed, { ...settings, workers: options.workers ?? 2, ...(options.out ? { out: options.out } : {}) });
  } finally {
    if (owned) client.disconnect();
  }
}

export { kickoff, crawlStats, CrawlWorker, loadSeedFile, validateSeed };
export type { Seed, WorkerSummary, OnPage, CrawlStats, StatsView, CrawlResult, KickoffResult };
export { SeedError, SEED_DEFAULTS } from './crawl/seed/index.js';
export { WORKER_DEFAULTS } from './crawl/worker.js';
export { ROBOTS } from './crawl/robots/index.js';
export { WeirError, ERROR_CODES, type WeirErrorCode } from './errors.js';
export * as queue from './queue/index.js';
export { serveStatus, type StatusServer } from './status/server.js';
export { StatusSource, type StatusView } from './status/source.js';
