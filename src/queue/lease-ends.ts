import { checkInt, checkItems, checkReason } from './checks.js';
import { LIMITS } from './limits.js';
import { decodeOutcome, decodeRetry } from './replies.js';
import { SendReports } from './send-reports.js';
import type { Lease, LeaseOutcome, RetryOptions } from './types.js';

/** How a lease ends other than by a commit: handed back, tried again later, dead-lettered, or done and due again later. */
export class LeaseEnds extends SendReports {
  /** Hands a lease back unfinished: head of its queue, no attempt counted. */
  async release(lease: Lease): Promise<LeaseOutcome> {
    return decodeOutcome(await this.run('release', lease.shard, [lease.token]));
  }

  /** Tries the item again later; 'dead' when its attempts ran out. */
  async retry(lease: Lease, options: RetryOptions = {}): Promise<LeaseOutcome | 'dead'> {
    const delayMs = checkInt('delayMs', options.delayMs ?? 0, 0, LIMITS.maxDelayMs);
    const count = options.countAttempt === false ? '0' : '1';
    const args: (string | number)[] = [lease.token, delayMs, checkReason(options.reason ?? ''), count];
    if (options.item !== undefined) {
      checkItems([options.item]);
      args.push(options.item);
    }
    return decodeRetry(await this.run('retry', lease.shard, args));
  }

  /** Sends the item straight to the dead letter. */
  async fail(lease: Lease, reason: string): Promise<LeaseOutcome> {
    return decodeOutcome(await this.run('fail', lease.shard, [lease.token, checkReason(reason)]));
  }

  /**
   * The lease's work is done (counted as a commit is) and its item is due
   * again in `delayMs`: it then joins the tail of its queue like a new item
   * (not its head, as a retry does), with no attempts. `item` replaces the
   * leased one (what the caller learnt this time: a crawler's record of the
   * page). A revisit waiting keeps the arena from being drained.
   */
  async revisit(lease: Lease, options: { delayMs: number; item?: string }): Promise<LeaseOutcome> {
    const args: (string | number)[] = [lease.token, checkInt('delayMs', options.delayMs, 1, LIMITS.maxDelayMs)];
    if (options.item !== undefined) {
      checkItems([options.item]);
      args.push(options.item);
    }
    return decodeOutcome(await this.run('revisit', lease.shard, args));
  }
}
