import type { RedisClient } from './types.js';

interface Waiter {
  resolve: (woken: boolean) => void;
  timer: NodeJS.Timeout | undefined;
  onAbort: (() => void) | undefined;
  signal: AbortSignal | undefined;
}

/** Longest single BLPOP: a waiter with no deadline still re-checks this often. */
export const MAX_BLOCK_SECONDS = 5;

/**
 * Waits for the arena's wake list on one dedicated blocking connection,
 * shared by every local waiter of one arena.
 *
 * A wake token goes to exactly one local waiter (the oldest); that waiter
 * then dequeues with `woken` set, and the dequeue script passes the token on
 * when more work is ready, so one enqueue wakes one worker, not all of them.
 * Deadlines are kept with local timers: Redis's own blocking timeouts are
 * only as fine as its `hz` (about 100 ms by default).
 */
export class WakeListener {
  private readonly waiters: Waiter[] = [];
  private blocking = false;
  private closed = false;

  constructor(
    private readonly blocker: RedisClient,
    private readonly wakeKey: string,
  ) {}

  /** Resolves true when woken, false on timeout, abort or close. */
  wait(timeoutMs: number | null, signal?: AbortSignal): Promise<boolean> {
    if (this.closed || signal?.aborted) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      const waiter: Waiter = { resolve, timer: undefined, onAbort: undefined, signal };
      const settle = (woken: boolean): void => {
        const i = this.waiters.indexOf(waiter);
        if (i >= 0) this.waiters.splice(i, 1);
        if (waiter.timer) clearTimeout(waiter.timer);
        if (waiter.onAbort) signal?.removeEventListener('abort', waiter.onAbort);
        resolve(woken);
      };
      waiter.resolve = settle;
      if (timeoutMs !== null) waiter.timer = setTimeout(() => settle(false), Math.max(0, timeoutMs));
      if (signal) {
        waiter.onAbort = () => settle(false);
        signal.addEventListener('abort', waiter.onAbort, { once: true });
      }
      this.waiters.push(waiter);
      this.pump();
    });
  }

  private pump(): void {
    if (this.blocking || this.closed || this.waiters.length === 0) return;
    this.blocking = true;
    this.blocker
      .blpop(this.wakeKey, MAX_BLOCK_SECONDS)
      .then(async (res) => {
        this.blocking = false;
        if (!res) return;
        const first = this.waiters[0];
        if (first) {
          first.resolve(true);
        } else if (!this.closed) {
          // Nobody here wants it any more: hand the token back for other workers.
          await this.handBack();
        }
      })
      .catch(() => {
        // Connection trouble: wake every waiter so each re-checks by dequeue,
        // which reports (and retries) the connection error properly.
        this.blocking = false;
        for (const w of [...this.waiters]) w.resolve(true);
      })
      .finally(() => {
        if (!this.closed && this.waiters.length > 0) setImmediate(() => this.pump());
      });
  }

  /** Puts a wake token back (at most one stays), for a waiter that got one it no longer wants. */
  async handBack(): Promise<void> {
    await this.blocker.rpush(this.wakeKey, '1');
    await this.blocker.ltrim(this.wakeKey, 0, 0);
  }

  close(): void {
    this.closed = true;
    for (const w of [...this.waiters]) w.resolve(false);
  }
}
