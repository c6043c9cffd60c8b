import type { Logger } from 'pino';
import type { CrawlMetrics } from './counters/index.js';
import type { LookupFunction } from './fetch/index.js';
import type { OnPage } from './links/index.js';
import type { JsonlWriter } from './output/index.js';

export type { OnPage, PageContext } from './links/index.js';

/** Documented worker defaults. */
export const WORKER_DEFAULTS = {
  /** Fetches in flight at once in one worker process (its lanes), across domains. */
  concurrency: 16,
  /**
   * Lease per URL; renewed every third of a lease while its URL is handled
   * (and, done with, while its lane waits for the commit before it to be
   * answered), so a live worker keeps its URLs however long a fetch takes, and a dead
   * worker's URLs go back to the queue within this of its last renewal.
   */
  leaseMs: 10_000,
  /**
   * Most ms a lane's queue call waits for other lanes' to share its script
   * call, when the worker's calls have lately come closer together than
   * that (FairQueueOptions.lingerMs): a busy worker's pages then cost Redis
   * fewer calls, at a few ms a page where pages take tens or hundreds
   * (docs/benchmarks.md).
   */
  lingerMs: 5,
  /**
   * Leases a lane's take may ask for beyond its own, kept for the worker's
   * next lanes (FairQueueOptions.spareLeases; at most concurrency − 1): only
   * from domains without a rate, so no slot is held. Lanes that finish one
   * after another then take several pages in one script call, without
   * waiting for each other.
   */
  spareLeases: 4,
  /** How often an idle worker with exitWhenDone checks whether the arena is drained. */
  drainCheckMs: 500,
} as const;

/**
 * The shortest lease the command line and the API take: a lease is renewed
 * every third of it while its URL is handled, and shorter ones could expire
 * under load.
 */
export const MIN_LEASE_MS = 1000;

export interface WorkerOptions {
  /** Lanes: fetches in flight at once. */
  concurrency?: number;
  leaseMs?: number;
  /** See WORKER_DEFAULTS.lingerMs; 0: only calls made in the same turn of the event loop share one. */
  lingerMs?: number;
  /** See WORKER_DEFAULTS.spareLeases; 0: each lane takes only its own. */
  spareLeases?: number;
  /** FairQueueOptions.replylessReports (default true); the command reads WEIR_REPLYLESS_REPORTS=0 as false. */
  replylessReports?: boolean;
  exitWhenDone?: boolean;
  out?: JsonlWriter;
  logger?: Logger;
  onPage?: OnPage;
  /** Aborting stops dequeuing; leases in flight are handed back. */
  signal?: AbortSignal;
  /** Injectable DNS (tests). */
  lookup?: LookupFunction;
  /** With perServer: how long a host's resolved address stands before it is resolved again (default ADDRESS_TTL_MS, 1 h). */
  addressTtlMs?: number;
  /** Backoff base after a failed robots.txt fetch (default ROBOTS.retryBaseMs, 1 s). */
  robotsRetryBaseMs?: number;
  /** Backoff base for 5xx and network errors (default RETRY_POLICY.retryBaseMs, 1 s). */
  retryBaseMs?: number;
  /** Floor of a Retry-After pause, doubled per time a URL was paced (default RETRY_POLICY.pacingFloorMs, 1 s). */
  pacingFloorMs?: number;
  /** Prometheus metrics to keep (see CrawlMetrics). */
  metrics?: CrawlMetrics;
  /** Keep every exchange in WARC files in `dir` (this process's own files, a new one past `maxBytes`, default 1 GiB). */
  warc?: { dir: string; maxBytes?: number };
}

export interface WorkerSummary {
  pages: number;
  errors: number;
  robotsBlocked: number;
  redirects: number;
  enqueued: number;
  malformedUrls: number;
  released: number;
  /** Dequeue script calls this worker made, and how many of them served nothing (the Redis work waiting costs). */
  dequeues: number;
  emptyDequeues: number;
  /** Wake-ups taken from the arena's wake list. */
  wakeups: number;
  /** archiveFailed: a WARC record could not be written (a full disk): the worker stopped, its leases handed back. */
  exitReason: 'drained' | 'maxPages' | 'stopped' | 'archiveFailed';
}
