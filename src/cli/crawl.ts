import type { ChildProcess } from 'node:child_process';
import type { CrawlLock } from '../crawl/store/index.js';
import { startCrawl } from '../crawl/run.js';
import { crawlStats } from '../crawl/counters/index.js';
import { FairQueue } from '../queue/index.js';
import { connectRedis } from '../redis.js';
import type { CommandContext } from './context.js';
import { formatCrawlSummary, progressLine } from './draw.js';
import { EXIT } from './exit.js';
import { sayPlacement } from './redis.js';
import { keepKickoffHeapSmall } from './kickoff.js';
import { forwardSignals } from './signals.js';
import { AWAIT_KICKOFF_ENV, spawnWeir, tellWorkers, type StartWord } from './crawl-start.js';
import { takeSpareWorker } from './spare-worker.js';

export interface CrawlFlags {
  workers: number;
  concurrency: number;
  out?: string;
  warc?: { dir: string; maxBytes: number };
  /** Extra arguments for each worker process (the log format, say). */
  workerArgs?: string[];
}

/**
 * `weir crawl SEED`: kickoff, then N `weir worker --exit-when-done`
 * processes, a progress line from Redis, and a summary table at the end.
 */
export async function cmdCrawl({ seedPath, seed, url, log }: CommandContext, flags: CrawlFlags): Promise<number> {
  keepKickoffHeapSmall();
  const redis = await connectRedis(url);
  const queue = new FairQueue(redis);
  const startedAt = Date.now();
  // The workers start now and wait for the kickoff's word (crawl-start.ts).
  const children = startWorkers(seedPath, url, flags);
  const exited = children.map((c) => new Promise<number>((res) => c.on('exit', (code, signal) => res(code ?? (signal ? 128 : 1)))));
  let lock: CrawlLock | undefined;
  let signals: ReturnType<typeof forwardSignals> | undefined;
  let word: StartWord = 'stop';
  try {
    const started = await startCrawl(redis, seed, queue, flags.out);
    lock = started.lock;
    log.info({ arena: seed.arena, ...started.kickoff, workers: flags.workers }, 'kickoff done; starting workers');
    await sayPlacement(redis, queue, seed.arena, log);
    if (started.alreadyDrained) {
      process.stdout.write(`arena ${seed.arena} is already drained: nothing to crawl. Run \`weir clear ${seedPath} --yes\` (or use another arena) to crawl again.\n`);
      return EXIT.ok;
    }
    word = 'go';
    tellWorkers(children, word);
    signals = forwardSignals(children);
    const stopProgress = progressLine(process.stdout, progressText(redis, queue, seed.arena, startedAt));
    const codes = await Promise.all(exited);
    stopProgress();
    const stats = await crawlStats(redis, seed.arena, queue);
    process.stdout.write(`${formatCrawlSummary(stats, (Date.now() - startedAt) / 1000, flags.workers, flags.out)}\n`);
    if (signals.stopping()) return codes.find((c) => c === EXIT.sigint || c === EXIT.sigterm) ?? EXIT.sigint;
    return codes.every((c) => c === 0) ? EXIT.ok : EXIT.failure;
  } finally {
    // Told to stop (the kickoff failed or found nothing): they leave at once; wait so none outlives the command.
    if (word === 'stop') {
      tellWorkers(children, word);
      await Promise.all(exited);
    }
    signals?.release();
    await lock?.release();
    await queue.close();
    redis.disconnect();
  }
}

/** `flags.workers` processes of `weir worker SEED --exit-when-done`, each waiting for the kickoff's word. */
function startWorkers(seedPath: string, url: string, flags: CrawlFlags): ChildProcess[] {
  const args = ['worker', seedPath, '--exit-when-done', '--concurrency', String(flags.concurrency), ...(flags.out ? ['--out', flags.out] : []), ...(flags.warc ? ['--warc', flags.warc.dir, '--warc-max-bytes', String(flags.warc.maxBytes)] : []), ...(flags.workerArgs ?? [])];
  // The Redis URL goes by environment, not argv: a password would show in `ps`.
  const env = { ...process.env, REDIS_URL: url, WEIR_NO_PROGRESS: '1', [AWAIT_KICKOFF_ENV]: '1' };
  // The first is the spare started at the command's entry (spare-worker.ts), when there is one.
  const first = takeSpareWorker(args, env);
  const spawned = Array.from({ length: flags.workers - (first ? 1 : 0) }, () => spawnWeir(args, env));
  return first ? [first, ...spawned] : spawned;
}

/** The crawl's progress, from Redis. */
function progressText(redis: Parameters<typeof crawlStats>[0], queue: FairQueue, arena: string, startedAt: number): () => Promise<string> {
  let last = { at: Date.now(), pages: 0 };
  return async () => {
    const s = await crawlStats(redis, arena, queue);
    const now = Date.now();
    const rate = ((s.totals.pages - last.pages) * 1000) / Math.max(1, now - last.at);
    last = { at: now, pages: s.totals.pages };
    return `[${((now - startedAt) / 1000).toFixed(0)} s] ${s.totals.pages} pages (${rate.toFixed(1)}/s), ${s.totals.queued} queued, ${s.totals.leased} in flight, ${s.totals.delayed} ${s.totals.revisits.done > 0 ? 'waiting (revisits, retries)' : 'waiting to retry'}, ${s.totals.errors} errors`;
  };
}
