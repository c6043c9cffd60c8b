import type { Lease, LeaseOutcome } from './types.js';

/**
 * Leases a take was served beyond the one it asked for (lua/includes/serve.lua:
 * spares come only from queues without a rate that were due, so holding
 * one a while before acting on it breaks no slot), kept for this client's
 * next takes of the same arena: a worker whose lanes finish one after
 * another then spends one script call on several pages.
 */
export class SpareLeases {
  private readonly byArena = new Map<string, Lease[]>();

  /** Spares held for `arena`. */
  count(arena: string): number {
    return this.byArena.get(arena)?.length ?? 0;
  }

  put(leases: readonly Lease[]): void {
    for (const l of leases) {
      const list = this.byArena.get(l.arena);
      if (list) list.push(l);
      else this.byArena.set(l.arena, [l]);
    }
  }

  /**
   * The oldest spare of `arena` with at least half its lease left at
   * `nowMs` (Redis ms): the taker renews a lease a third of the way in, so
   * one older than half could lapse first. Older ones are given to
   * `handBack` (to be released, in the order given), not served.
   */
  take(arena: string, nowMs: number, handBack: (leases: Lease[]) => void): Lease | null {
    const list = this.byArena.get(arena);
    const old: Lease[] = [];
    let found: Lease | null = null;
    while (list && list.length > 0 && !found) {
      const lease = list.shift() as Lease;
      if ((lease.expiresAt - nowMs) * 2 >= lease.expiresAt - lease.servedAt) found = lease;
      else old.push(lease);
    }
    if (old.length > 0) handBack(handBackOrder(old));
    return found;
  }

  /** Every spare held, to be released in the order given; the store left empty (a closing client hands them back). */
  drain(): Lease[] {
    const all = handBackOrder([...this.byArena.values()].flat());
    this.byArena.clear();
    return all;
  }
}

/**
 * Leases released in this order go back to the heads of their queues (a
 * stack) in the order they were served: the last served first.
 */
function handBackOrder(leases: readonly Lease[]): Lease[] {
  return [...leases].reverse();
}

interface Riding {
  token: string;
  resolve: (r: LeaseOutcome) => void;
  reject: (e: unknown) => void;
}

/**
 * Commits waiting to ride on the next dequeue call to their shard (a lane
 * that took a spare has no call of its own to carry its commit), each for
 * at most `maxWaitMs`, after which the shard's riders go in a commit call
 * of their own. Its lease is held meanwhile, so nothing is lost if the
 * process dies: the lease expires and its item is served again.
 */
export class RidingCommits {
  private readonly byTag = new Map<string, { riders: Riding[]; timer: NodeJS.Timeout }>();

  constructor(
    private readonly sendAlone: (tag: string, token: string) => Promise<LeaseOutcome>,
    private readonly maxWaitMs: number,
  ) {}

  add(tag: string, token: string): Promise<LeaseOutcome> {
    return new Promise<LeaseOutcome>((resolve, reject) => {
      let entry = this.byTag.get(tag);
      if (!entry) {
        entry = { riders: [], timer: setTimeout(() => this.sendNow(tag), this.maxWaitMs) };
        this.byTag.set(tag, entry);
      }
      entry.riders.push({ token, resolve, reject });
    });
  }

  /**
   * Up to `max` of shard `tag`'s riders for a dequeue call: their tokens,
   * and what to do with that call's outcomes for them (or its failure).
   */
  board(tag: string, max: number): { tokens: string[]; settle: (outcomes: readonly LeaseOutcome[]) => void; fail: (err: unknown) => void } {
    const entry = this.byTag.get(tag);
    const riders = entry ? entry.riders.splice(0, Math.max(0, max)) : [];
    if (entry && entry.riders.length === 0) {
      clearTimeout(entry.timer);
      this.byTag.delete(tag);
    }
    return {
      tokens: riders.map((r) => r.token),
      settle: (outcomes) => riders.forEach((r, i) => r.resolve(outcomes[i] ?? 'stale')),
      fail: (err) => riders.forEach((r) => r.reject(err)),
    };
  }

  /** Every shard's riders go now, each in a commit call (a closing client). */
  flushAll(): void {
    for (const tag of [...this.byTag.keys()]) this.sendNow(tag);
  }

  private sendNow(tag: string): void {
    const { tokens, settle, fail } = this.board(tag, Number.MAX_SAFE_INTEGER);
    Promise.all(tokens.map((t) => this.sendAlone(tag, t))).then(settle, fail);
  }
}
