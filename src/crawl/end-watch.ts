import type { Logger } from 'pino';
import type { PageBudget } from './lease/index.js';
import { WORKER_DEFAULTS, type WorkerSummary } from './worker-options.js';

/**
 * After the worker goes idle (no lease held), the checks that follow the
 * one made at once: the crawl may just have ended, or be ending as another
 * worker settles its last leases, and a short crawl should not wait out
 * a whole drainCheckMs to learn it (on average half of it, 250 ms, at the
 * end of every `weir crawl`). Then every drainCheckMs again.
 */
const AFTER_IDLE_MS = [25, 50, 100, 200, 400] as const;

/**
 * Watches for the end of a worker's work: maxPages reached (counted in
 * Redis across all workers), or, when `drained` is given (exitWhenDone),
 * nothing queued, leased or waiting in the whole arena. Checks every
 * drainCheckMs, and at once when told the worker is idle (`idle()`: its
 * last lease settled), then a few times soon after. Halts the worker at the
 * end (fetches in flight finish).
 */
export class EndWatch {
  private wake: (() => void) | null = null;
  private soon: number[] = [];

  constructor(
    private readonly w: {
      budget: Pick<PageBudget, 'limited' | 'spent' | 'used'>;
      drained: (() => Promise<boolean>) | null;
      halt: (reason: WorkerSummary['exitReason']) => void;
      signal: AbortSignal;
      log?: Logger | undefined;
      /** Between checks when not told of idleness (default WORKER_DEFAULTS.drainCheckMs). */
      everyMs?: number;
    },
  ) {}

  /** The worker holds no lease now: check at once, then soon again. */
  idle(): void {
    this.soon = [...AFTER_IDLE_MS];
    this.wake?.();
  }

  /** Resolves when the end is found or the worker stops; at once when there is nothing to watch for. */
  async run(): Promise<void> {
    const w = this.w;
    if (!w.budget.limited && !w.drained) return;
    while (!w.signal.aborted) {
      await this.next();
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

  /** Until the next check is due, or idle() asks for one now. */
  private next(): Promise<void> {
    const ms = this.soon.shift() ?? this.w.everyMs ?? WORKER_DEFAULTS.drainCheckMs;
    const signal = this.w.signal;
    return new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(t);
        signal.removeEventListener('abort', done);
        this.wake = null;
        resolve();
      };
      const t = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
      this.wake = done;
    });
  }
}
