/**
 * The waiting side of the client: what the last dequeue reply of each shard
 * of an arena (src/queue/shards.ts; an arena of one shard is the usual case)
 * said about when work may be ready, the queues it promised this client,
 * and waiting on a local timer or the shards' wake lists until then. It
 * decides only when to call dequeue again, and on which shard, never what
 * is served: that is the scripts'.
 */
import { setMaxListeners } from 'node:events';
import { DEFAULTS } from './limits.js';
import { sleep } from '../sleep.js';
import type { DequeueResult, Lease, QueueClientCounters, RedisClient } from './types.js';
import { WakeListener } from './wake.js';

/** A promise lapses within 20 ms of its slot (lua/dequeue.lua): a few are plenty to keep. */
const MAX_PROMISES = 8;

/** When work may be ready on a shard (local ms; null = only after a wake-up), and whether that time is a slot promised to us. */
interface Hint {
  at: number | null;
  promised: boolean;
}

export class Waiting {
  private readonly listeners = new Map<string, WakeListener>();
  /** Per shard tag, from the last dequeue reply. */
  private readonly nextWork = new Map<string, Hint>();
  /** Per shard tag, queue ids the script promised this client, oldest first. */
  private readonly promises = new Map<string, string[]>();
  /** Per shard tag: ready queues at its last reply (the shard's weight), and its smooth weighted round-robin credit. */
  private readonly weights = new Map<string, { ready: number; credit: number }>();
  /** Takes now waiting for work (a timer or the wake lists), not calling. */
  private sleeping = 0;
  /** Takes blocked on the wake lists: when each will look again at the latest (local ms), and how to make it look now. */
  private readonly blocked = new Set<{ until: number; cut: AbortController }>();

  constructor(
    private readonly blocker: (tag: string) => RedisClient,
    private readonly wakeKey: (tag: string) => string,
    private readonly counters: QueueClientCounters,
  ) {}

  /** The promise to pass back with the next dequeue of shard `tag` ('' when none). */
  nextPromise(tag: string): string {
    return this.promises.get(tag)?.shift() ?? '';
  }

  /** A dequeue reply's word on when work may be ready (local ms, null = only after new work), its promise and (when asked) its ready queues. */
  noteReply(tag: string, readyAt: number | null, promised: string, readyQueues = -1): void {
    if (readyQueues >= 0) this.weights.set(tag, { ready: readyQueues, credit: this.weights.get(tag)?.credit ?? 0 });
    // Replies to concurrent calls arrive one after another: one without a
    // promise must not put off the wake-up for a slot another one promised us.
    // A promised time already past is spent (a call has been made since it
    // came): kept, it would send every caller straight back to Redis.
    const current = this.nextWork.get(tag);
    const keep = promised === '' && current?.promised === true && current.at !== null && current.at > performance.now() && (readyAt === null || current.at < readyAt);
    if (!keep) this.nextWork.set(tag, { at: readyAt, promised: promised !== '' });
    // A take blocked on the wake lists until an older, later word would miss
    // the sooner slot this reply tells of (its caller may be off to work with
    // its lease): the one that would look last looks again now; its own reply
    // cuts the next, if need be. (The test: six takes of one client on one
    // paced queue; before, five of them slept out a lease's whole length.)
    if (readyAt !== null) {
      let last: { until: number; cut: AbortController } | undefined;
      for (const b of this.blocked) if (b.until > readyAt && !b.cut.signal.aborted && (!last || b.until > last.until)) last = b;
      last?.cut.abort();
    }
    if (promised === '') return;
    const list = this.promises.get(tag) ?? [];
    if (list.push(promised) > MAX_PROMISES) list.shift();
    this.promises.set(tag, list);
  }

  /**
   * Dequeues until a lease comes, waiting in between: on a local timer for
   * a known next-eligible time, on the shards' wake lists when only new work
   * can help. Among shards that may have work now, the next call goes to one
   * by smooth weighted round-robin on their ready queues, so every queue of
   * the arena gets its turn whatever its shard. Resolves null only when
   * `signal` aborts. `first`: a shard whose call goes at once (it carries a
   * commit that must not wait).
   */
  async take(tags: () => Promise<readonly string[]>, dequeue: (tag: string, woken: boolean) => Promise<DequeueResult>, signal?: AbortSignal, first?: string): Promise<Lease | null> {
    let next: { tag: string; woken: boolean } | undefined = first === undefined ? undefined : { tag: first, woken: false };
    while (!signal?.aborted) {
      const all = await tags();
      // Wait first if the last replies said nothing is ready yet: no empty
      // call is spent to learn what the scripts already told us.
      next ??= this.pick(all) ?? (await this.sleep(all, signal));
      if (signal?.aborted) break;
      const r = await dequeue(next.tag, next.woken);
      next = undefined;
      if (r.lease) return r.lease;
    }
    return null;
  }

  /** Whether some take of this client waits for work now (a spare would sit while it waits: FairQueue asks for none then). */
  get anySleeping(): boolean {
    return this.sleeping > 0;
  }

  private async sleep(tags: readonly string[], signal?: AbortSignal): Promise<{ tag: string; woken: boolean }> {
    this.sleeping++;
    try {
      return await this.waitAny(tags, signal);
    } finally {
      this.sleeping--;
    }
  }

  /** The shard whose turn it is among those that may have work now; undefined when none may. */
  choose(tags: readonly string[]): string | undefined {
    return this.pick(tags)?.tag;
  }

  /** `tags` from the one whose turn it is (choose), then the rest in order: where a plain dequeue looks, not always the first shard first. */
  inTurn(tags: readonly string[]): readonly string[] {
    const first = tags.length > 1 ? this.choose(tags) : undefined;
    return first === undefined ? tags : [first, ...tags.filter((t) => t !== first)];
  }

  /** Whether the last word on shard `tag` was "only new work helps" (or there is none yet). */
  awaitsNewWork(tag: string): boolean {
    const h = this.nextWork.get(tag);
    return h === undefined || h.at === null;
  }

  /** A shard that may have work now (no word yet, or its time has come), by weighted turn; undefined when none. */
  private pick(tags: readonly string[]): { tag: string; woken: false } | undefined {
    const now = performance.now();
    const ready = tags.filter((t) => {
      const h = this.nextWork.get(t);
      return h === undefined || (h.at !== null && h.at <= now);
    });
    if (ready.length <= 1) return ready[0] === undefined ? undefined : { tag: ready[0], woken: false };
    // A shard not heard from yet weighs as much as the heaviest heard from:
    // at weight 1 beside shards of 80,000 ready queues (an arena of 10^6 on
    // 12 shards) it would be asked once in 80,000 turns, and lanes that
    // began on the shards heard from first would stay there.
    let unheard = 1;
    for (const t of ready) unheard = Math.max(unheard, this.weights.get(t)?.ready ?? 1);
    let best: string | undefined;
    let total = 0;
    for (const t of ready) {
      const w = this.weights.get(t) ?? { ready: unheard, credit: 0 };
      const weight = Math.max(1, w.ready);
      w.credit += weight;
      total += weight;
      this.weights.set(t, w);
      if (best === undefined || w.credit > (this.weights.get(best)?.credit ?? 0)) best = t;
    }
    const chosen = this.weights.get(best as string);
    if (chosen) chosen.credit -= total;
    return { tag: best as string, woken: false };
  }

  /**
   * Waits until some shard may have work: on a local timer when the soonest
   * known time is near, else on every shard's wake list (one blocking
   * connection each) until that time, or the idle re-check. Returns the
   * shard to call, and whether it was a wake-up.
   */
  private async waitAny(tags: readonly string[], signal?: AbortSignal): Promise<{ tag: string; woken: boolean }> {
    const now = performance.now();
    let soonest: { tag: string; at: number } | undefined;
    for (const t of tags) {
      const at = this.nextWork.get(t)?.at ?? null;
      if (at !== null && (soonest === undefined || at < soonest.at)) soonest = { tag: t, at };
    }
    const waited = new Map(tags.map((t) => [t, this.nextWork.get(t)]));
    if (soonest && soonest.at - now <= DEFAULTS.timerWaitMaxMs) {
      // (Up to a millisecond late: the lease is still taken well ahead of its slot.)
      await sleep(soonest.at - now, signal, 1);
      this.forgetSpent(waited, false);
      return { tag: soonest.tag, woken: false };
    }
    const timeoutMs = soonest ? soonest.at - now : DEFAULTS.idleCheckMs;
    const me = { until: now + timeoutMs, cut: new AbortController() };
    this.blocked.add(me);
    let woken: string | undefined;
    try {
      woken = await this.blockOnAll(tags, timeoutMs, signal ? AbortSignal.any([signal, me.cut.signal]) : me.cut.signal);
    } finally {
      this.blocked.delete(me);
    }
    // (Cut short by sooner word: the next look goes where that word says.)
    if (woken === undefined && me.cut.signal.aborted) return this.pick(tags) ?? this.waitAny(tags, signal);
    if (woken !== undefined) {
      this.counters.wakeups++;
      return { tag: woken, woken: true };
    }
    // Timed out: the words that came due are spent, and after the idle
    // re-check's wait every shard's is (the next calls re-check them).
    this.forgetSpent(waited, soonest === undefined);
    return this.pick(tags) ?? { tag: soonest?.tag ?? (tags[0] as string), woken: false };
  }

  /**
   * Drops the hints a wait was for that came due, and with `idle` those that
   * said "only new work helps" too, unless a reply has replaced them since.
   * (Not after a short timed wait: every shard that waits for new work would
   * be asked again each time any slot comes, a storm of empty calls.)
   */
  private forgetSpent(waited: Map<string, Hint | undefined>, idle: boolean): void {
    const now = performance.now();
    for (const [t, h] of waited) {
      if (h && this.nextWork.get(t) === h && ((idle && h.at === null) || (h.at !== null && h.at <= now + 1))) this.nextWork.delete(t);
    }
  }

  /** Blocks on every shard's wake list at once; the shard whose token came first, or undefined on timeout or abort. */
  private blockOnAll(tags: readonly string[], timeoutMs: number, signal?: AbortSignal): Promise<string | undefined> {
    const stop = new AbortController();
    // One listener per shard waits on it (an arena of 12 shards passes Node's
    // warning threshold of 10; each is removed as its wait ends).
    setMaxListeners(tags.length + 1, stop.signal);
    const onAbort = (): void => stop.abort();
    signal?.addEventListener('abort', onAbort, { once: true });
    return new Promise<string | undefined>((resolve) => {
      let pending = tags.length;
      let settled = false;
      const done = (tag: string | undefined): void => {
        settled = true;
        signal?.removeEventListener('abort', onAbort);
        stop.abort();
        resolve(tag);
      };
      for (const t of tags) {
        const listener = this.listener(t);
        void listener.wait(timeoutMs, stop.signal).then((woken) => {
          // A second shard's token, come before the first's abort reached it,
          // is another worker's wake-up: it goes back.
          if (woken && settled) listener.handBack().catch(() => undefined);
          else if (woken) done(t);
          else if (--pending === 0 && !settled) done(undefined);
        });
      }
    });
  }

  private listener(tag: string): WakeListener {
    let l = this.listeners.get(tag);
    if (!l) {
      l = new WakeListener(this.blocker(tag), this.wakeKey(tag));
      this.listeners.set(tag, l);
    }
    return l;
  }

  /** Ends every local wait. */
  close(): void {
    for (const l of this.listeners.values()) l.close();
    this.listeners.clear();
  }
}
