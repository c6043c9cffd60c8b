/**
 * The waiting side of the client: what the last dequeue reply said about
 * when work may be ready, the queues it promised this client, and waiting
 * on a local timer or the arena's wake list until then. It decides only
 * when to call dequeue again, never what is served: that is the scripts'.
 */
import type { Cluster, Redis } from 'ioredis';
import { DEFAULTS } from './limits.js';
import { sleep } from './sleep.js';
import type { DequeueResult, Lease, QueueClientCounters } from './types.js';
import { WakeListener } from './wake.js';

/** A promise lapses within 20 ms of its slot (lua/dequeue.lua): a few are plenty to keep. */
const MAX_PROMISES = 8;

export class Waiting {
  private readonly listeners = new Map<string, WakeListener>();
  /**
   * Per arena, from the last dequeue reply: when work may be ready (local ms;
   * null = only after a wake-up), and whether that time is a slot promised to us.
   */
  private readonly nextWork = new Map<string, { at: number | null; promised: boolean }>();
  /** Per arena, queue ids the script promised this client, oldest first. */
  private readonly promises = new Map<string, string[]>();

  constructor(
    private readonly blocker: () => Redis | Cluster,
    private readonly wakeKey: (arena: string) => string,
    private readonly counters: QueueClientCounters,
  ) {}

  /** The promise to pass back with the next dequeue of `arena` ('' when none). */
  nextPromise(arena: string): string {
    return this.promises.get(arena)?.shift() ?? '';
  }

  /** A dequeue reply's word on when work may be ready (local ms, null = only after new work) and its promise. */
  noteReply(arena: string, readyAt: number | null, promised: string): void {
    // Replies to concurrent calls arrive one after another: one without a
    // promise must not put off the wake-up for a slot another one promised us.
    // A promised time already past is spent (a call has been made since it
    // came): kept, it would send every caller straight back to Redis.
    const current = this.nextWork.get(arena);
    const keep = promised === '' && current?.promised === true && current.at !== null && current.at > performance.now() && (readyAt === null || current.at < readyAt);
    if (!keep) this.nextWork.set(arena, { at: readyAt, promised: promised !== '' });
    if (promised === '') return;
    const list = this.promises.get(arena) ?? [];
    if (list.push(promised) > MAX_PROMISES) list.shift();
    this.promises.set(arena, list);
  }

  /**
   * Dequeues until a lease comes, waiting in between: on a local timer for
   * a known next-eligible time, on the arena's wake list when only new work
   * can help. Resolves null only when `signal` aborts. `callFirst`: the
   * first call goes at once (it carries a commit that must not wait).
   */
  async take(arena: string, dequeue: (woken: boolean) => Promise<DequeueResult>, signal?: AbortSignal, callFirst = false): Promise<Lease | null> {
    let woken = false;
    let first = callFirst;
    while (!signal?.aborted) {
      // Wait first if the last reply said nothing is ready yet: no empty call
      // is spent to learn what the script already told us.
      const hint = woken || first ? undefined : this.nextWork.get(arena);
      first = false;
      if (hint) {
        const waitMs = hint.at === null ? null : hint.at - performance.now();
        if (waitMs === null || waitMs > 0) {
          woken = await this.waitFor(arena, waitMs, signal);
          if (signal?.aborted) break;
          if (!woken && this.nextWork.get(arena) === hint) this.nextWork.delete(arena);
        }
      }
      const r = await dequeue(woken);
      woken = false;
      if (r.lease) return r.lease;
    }
    return null;
  }

  /** Sleeps on a local timer for short waits; blocks on the wake list for long or open-ended ones. */
  private async waitFor(arena: string, waitMs: number | null, signal?: AbortSignal): Promise<boolean> {
    if (waitMs !== null && waitMs <= DEFAULTS.timerWaitMaxMs) {
      await sleep(waitMs, signal);
      return false;
    }
    const woken = await this.listener(arena).wait(waitMs ?? DEFAULTS.idleCheckMs, signal);
    if (woken) this.counters.wakeups++;
    return woken;
  }

  private listener(arena: string): WakeListener {
    let l = this.listeners.get(arena);
    if (!l) {
      l = new WakeListener(this.blocker(), this.wakeKey(arena));
      this.listeners.set(arena, l);
    }
    return l;
  }

  /** Ends every local wait. */
  close(): void {
    for (const l of this.listeners.values()) l.close();
    this.listeners.clear();
  }
}
