import type { Logger } from 'pino';
import { sleep } from '../sleep.js';
import type { PageBudget } from './lease/index.js';
import { WORKER_DEFAULTS, type WorkerSummary } from './worker-options.js';

/**
 * Watches for the end of a worker's work, every drainCheckMs: maxPages
 * reached (counted in Redis across all workers), or, when `drained` is
 * given (exitWhenDone), nothing queued, leased or waiting in the whole
 * arena. Then halts the worker (fetches in flight finish). Resolves at
 * once when there is nothing to watch for.
 */
export async function watchForEnd(w: {
  budget: PageBudget;
  drained: (() => Promise<boolean>) | null;
  halt: (reason: WorkerSummary['exitReason']) => void;
  signal: AbortSignal;
  log?: Logger | undefined;
}): Promise<void> {
  if (!w.budget.limited && !w.drained) return;
  while (!w.signal.aborted) {
    await sleep(WORKER_DEFAULTS.drainCheckMs, w.signal);
    if (w.signal.aborted) return;
    try {
      if (await w.budget.spent()) {
        w.log?.info({ pages: await w.budget.used() }, 'maxPages reached');
        w.halt('maxPages');
        return;
      }
      if (w.drained && (await w.drained())) {
        w.halt('drained');
        return;
      }
    } catch (err) {
      w.log?.warn({ err }, 'checking whether the arena is drained failed; will check again');
    }
  }
}
