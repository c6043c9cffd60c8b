import { ArenaAdmin } from './arena-admin.js';
import { checkInt, checkItems, checkReason } from './checks.js';
import { shardKeys } from './keys.js';
import { holdsForReport, LIMITS } from './limits.js';
import { decodeOutcome, decodeRetry } from './replies.js';
import type { ScriptArg } from './scripts.js';
import type { Lease, LeaseOutcome, RedisClient, RetryOptions } from './types.js';

/** sent.lua's arguments: the lease's queue, its servedAt (µs), what is reported and the µs that go with it. */
const sentArgs = (lease: Lease, what: '1' | '0' | 'w', us: number): ScriptArg[] => [lease.queue, Math.round(lease.servedAt * 1000), what, us];
const marginUs = (marginMs: number): number => checkInt('marginUs', Math.round(marginMs * 1000), 0, LIMITS.maxAheadMs * 1000);

/**
 * What a lease's holder tells the queue besides a commit: its rate-limited
 * request sent (lua/sent.lua: the queue's next slot is counted from the
 * report, the send window of TakeOptions sendWindowMs), and how the lease
 * ends otherwise: handed back, tried again later, dead-lettered, or done
 * and due again later.
 */
export class LeaseEnds extends ArenaAdmin {
  constructor(
    client: RedisClient,
    prefix: string,
    /** FairQueueOptions.replylessReports. */
    private readonly replylessReports = true,
  ) {
    super(client, prefix);
  }

  /**
   * Reports the request of a lease taken with a send window (TakeOptions
   * sendWindowMs): `wasSent` when it has been written (call as soon after
   * the write as can be: the queue's next slot is counted from this call's
   * arrival, plus `marginMs`), false when it never will be. Leases of
   * queues the send window does not hold (holdsForReport) need no
   * report. 'stale' when the queue was not waiting for it (reported
   * already, or its window lapsed).
   */
  async sent(lease: Lease, wasSent: boolean, marginMs = 0): Promise<LeaseOutcome> {
    if (!holdsForReport(lease)) return 'ok';
    return this.report(lease, sentArgs(lease, wasSent ? '1' : '0', marginUs(marginMs)));
  }

  /**
   * sent() for a caller that does not want its outcome: sent on a
   * connection that gets no reply (script-call.ts, OneWayCalls: one more connection to each
   * node, made on the first report), so no reply wakes the process; else
   * as sent(), its failure ignored. A lost report only holds the queue's
   * next slot to its send window's end.
   */
  reportSent(lease: Lease, wasSent: boolean, marginMs = 0): void {
    if (!holdsForReport(lease)) return;
    const args = sentArgs(lease, wasSent ? '1' : '0', marginUs(marginMs));
    if (this.replylessReports && this.scripts.sendOneWay('sent', shardKeys(this.prefix, lease.shard), args)) return;
    void this.report(lease, args).catch(() => undefined);
  }

  /**
   * The lease's request has not gone yet but will (its connection is still
   * being made): the queue holds its next slot `windowMs` from now, so the
   * request may still go within that. 'stale' as for sent().
   */
  async stillSending(lease: Lease, windowMs: number): Promise<LeaseOutcome> {
    if (!holdsForReport(lease)) return 'ok';
    return this.report(lease, sentArgs(lease, 'w', checkInt('windowMs', windowMs, 1, LIMITS.maxLeaseMs) * 1000));
  }

  private async report(lease: Lease, args: ScriptArg[]): Promise<LeaseOutcome> {
    return decodeOutcome(await this.run('sent', lease.shard, args));
  }

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
