/**
 * A rate-limited lease's request, reported to its queue (lua/sent.lua): the
 * queue's next slot is counted from the report (the send window,
 * TakeOptions sendWindowMs).
 */
import { ArenaAdmin } from './arena-admin.js';
import { checkInt } from './checks.js';
import { shardKeys } from './keys.js';
import { holdsForReport, LIMITS } from './limits.js';
import { decodeOutcome } from './replies.js';
import type { Lease, LeaseOutcome, RedisClient } from './types.js';

export class SendReports extends ArenaAdmin {
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
    const margin = checkInt('marginUs', Math.round(marginMs * 1000), 0, LIMITS.maxAheadMs * 1000);
    return this.report(lease, wasSent ? '1' : '0', margin);
  }

  /**
   * sent() for a caller that does not want its outcome: sent on a
   * connection that gets no reply (one-way.ts: one more connection to each
   * node, made on the first report), so no reply wakes the process; else
   * as sent(), its failure ignored. A lost report only holds the queue's
   * next slot to its send window's end.
   */
  reportSent(lease: Lease, wasSent: boolean, marginMs = 0): void {
    if (!holdsForReport(lease)) return;
    const margin = checkInt('marginUs', Math.round(marginMs * 1000), 0, LIMITS.maxAheadMs * 1000);
    const args = [lease.queue, Math.round(lease.servedAt * 1000), wasSent ? '1' : '0', margin];
    if (this.replylessReports && this.scripts.sendOneWay('sent', shardKeys(this.prefix, lease.shard), args)) return;
    void this.report(lease, wasSent ? '1' : '0', margin).catch(() => undefined);
  }

  /**
   * The lease's request has not gone yet but will (its connection is still
   * being made): the queue holds its next slot `windowMs` from now, so the
   * request may still go within that. 'stale' as for sent().
   */
  async stillSending(lease: Lease, windowMs: number): Promise<LeaseOutcome> {
    if (!holdsForReport(lease)) return 'ok';
    return this.report(lease, 'w', checkInt('windowMs', windowMs, 1, LIMITS.maxLeaseMs) * 1000);
  }

  private async report(lease: Lease, what: '1' | '0' | 'w', us: number): Promise<LeaseOutcome> {
    return decodeOutcome(await this.run('sent', lease.shard, [lease.queue, Math.round(lease.servedAt * 1000), what, us]));
  }
}
