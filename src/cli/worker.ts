import { loadMetrics, type MetricsDomains } from '../crawl/counters/index.js';
import { JsonlWriter } from '../crawl/output/index.js';
import { storedSeed } from '../crawl/run.js';
import { CrawlWorker } from '../crawl/worker.js';
import { FairQueue } from '../queue/index.js';
import { connectRedis } from '../redis.js';
import type { CommandContext } from './context.js';
import { startWord } from './crawl-start.js';
import { progressLine } from './draw.js';
import { EXIT } from './exit.js';
import { sayPlacement, warnEviction } from './redis.js';
import { trapSignals, type Signals } from './signals.js';

export interface WorkerFlags {
  concurrency: number;
  out?: string;
  exitWhenDone: boolean;
  leaseMs: number;
  /** Prometheus metrics: where they listen, and which domains get series. */
  metrics?: { port: number; host: string; domains: MetricsDomains };
  redisWaitMs: number;
  warc?: { dir: string; maxBytes: number };
}

/** `weir worker SEED`: one worker process, until drained (--exit-when-done), maxPages or a signal. */
export async function cmdWorker(ctx: CommandContext, flags: WorkerFlags): Promise<number> {
  const sig = trapSignals(ctx.log);
  try {
    return await workerCommand(ctx, flags, sig);
  } finally {
    sig.release();
  }
}

async function workerCommand({ seed: local, url, log }: CommandContext, flags: WorkerFlags, sig: Signals): Promise<number> {
  // Started by `weir crawl` before its kickoff: connect meanwhile, crawl on its word.
  const word = startWord(sig.signal);
  const redis = await connectRedis(url, {
    waitMs: flags.redisWaitMs,
    connectTimeoutMs: 2000,
    onRetry: (attempt, delayMs, error) => log.warn({ attempt, delayMs, error }, `Redis unreachable (${error}): retrying in ${delayMs} ms`),
    // Tries come every 0.5 s: say so on the first and then every 20th (10 s).
    onReconnect: (attempt, delayMs) => void (attempt % 20 === 1 && log.warn({ attempt, delayMs }, 'Redis connection lost: reconnecting')),
    onWarning: (message) => log.warn(message),
  });
  if ((await word) === 'stop') {
    redis.disconnect();
    return sig.exitCode() ?? EXIT.ok;
  }
  await warnEviction(redis, log);
  log.info({ arena: local.arena }, 'worker starting');
  const seed = await storedSeed(redis, local, { log, signal: sig.signal });
  const out = flags.out ? new JsonlWriter(flags.out) : undefined;
  const statsQueue = new FairQueue(redis);
  const metrics = flags.metrics ? new (await loadMetrics()).CrawlMetrics(statsQueue, local.arena, { domains: flags.metrics.domains }) : undefined;
  let stopProgress: (() => void) | undefined;
  try {
    if (!seed) return sig.exitCode() ?? EXIT.ok;
    await sayPlacement(redis, statsQueue, seed.arena, log);
    if (metrics && flags.metrics) {
      const { host } = flags.metrics;
      log.info({ host, port: await metrics.listen(flags.metrics.port, host) }, 'Prometheus metrics on /metrics');
    }
    const worker = new CrawlWorker(redis, seed, {
      ...(metrics ? { metrics } : {}),
      ...(out ? { out } : {}),
      concurrency: flags.concurrency,
      leaseMs: flags.leaseMs,
      exitWhenDone: flags.exitWhenDone,
      replylessReports: process.env.WEIR_REPLYLESS_REPORTS !== '0',
      ...(flags.warc ? { warc: flags.warc } : {}),
      logger: log,
      signal: sig.signal,
    });
    if (process.stderr.isTTY && !process.env.WEIR_NO_PROGRESS) stopProgress = progressLine(process.stderr, progressText(worker, statsQueue, seed.arena), 1000);
    const summary = await worker.run();
    stopProgress?.();
    const usage = process.resourceUsage();
    // Sleeps (voluntary context switches): how often the event loop waited and woke; each wake costs CPU of its own.
    log.info({ ...summary, cpuUserMs: Math.round(usage.userCPUTime / 1000), cpuSystemMs: Math.round(usage.systemCPUTime / 1000), sleeps: usage.voluntaryContextSwitches }, 'worker finished');
    // Stopped by its own fault (logged where it happened): the supervisor must see it.
    if (summary.exitReason === 'archiveFailed') return sig.exitCode() ?? EXIT.failure;
  } finally {
    stopProgress?.();
    await out?.close();
    await metrics?.close();
    await statsQueue.close();
    redis.disconnect();
  }
  return sig.exitCode() ?? EXIT.ok;
}

/** This worker's pages/s and the arena's queue, for the progress line. */
function progressText(worker: CrawlWorker, queue: FairQueue, arena: string): () => Promise<string> {
  let last = { at: performance.now(), pages: 0 };
  return async () => {
    const s = await queue.stats(arena);
    const mine = worker.summary();
    const now = performance.now();
    const rate = ((mine.pages - last.pages) * 1000) / (now - last.at);
    last = { at: now, pages: mine.pages };
    return `weir ${arena}: ${rate.toFixed(1)} pages/s here, ${mine.pages} pages, ${mine.errors} errors | arena: ${s.queued} queued, ${s.leased} leased, ${s.delayed} waiting, ${s.done} done, ${s.dead} dead`;
  };
}
