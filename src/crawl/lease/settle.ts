import type { Logger } from 'pino';
import type { FairQueue, Lease, LeaseOutcome } from '../../queue/index.js';
import type { DomainQuota, PageBudget } from './budget.js';
import type { PauseNotes, QueuedUrl } from '../store/index.js';
import type { CrawlMetrics, Tallies, Tally } from '../counters/index.js';
import type { Outcome } from './outcome.js';
import type { JsonlWriter, PageRecord } from '../output/index.js';

/** A lease being handled: its decoded item and whether it holds a page reservation. */
export interface LeaseContext {
  lease: Lease;
  /** null when the queue item was not written by weir. */
  item: QueuedUrl | null;
  reserved: boolean;
  /** The URL's domain when its queue is not its domain's (a server's, with perServer). */
  domain?: string | undefined;
  /** The domain whose maxPagesPerDomain it holds a page reservation of (its queue's, or with perServer its URL's). */
  quotaDomain?: string | undefined;
}

/**
 * Carries out an outcome: the one place a lease ends. The queue call, then
 * the page budget (a reservation is kept only by a page committed 'ok'),
 * the counters, and the output line (only for what really ended: a commit
 * that came back 'ok', a dead letter).
 */
export class Settler {
  constructor(
    private readonly deps: {
      queue: FairQueue;
      budget: PageBudget;
      quota?: DomainQuota | undefined;
      tally: Tally;
      out?: JsonlWriter | undefined;
      metrics?: CrawlMetrics | undefined;
      log?: Logger | undefined;
      /** Every output line then says where its WARC record is (null when nothing was fetched). */
      archiving?: boolean;
      /** Where a Retry-After pause is noted for `status`. */
      pauses?: PauseNotes | undefined;
    },
  ) {}

  /** `committed`: a commit outcome's answer when its queue call was already made (FairQueue.commitAndTake). */
  async settle(ctx: LeaseContext, outcome: Outcome, committed?: Promise<LeaseOutcome>): Promise<void> {
    let kept = false;
    try {
      kept = await this.carryOut(ctx, outcome, committed);
    } finally {
      if (ctx.reserved && !kept) await this.deps.budget.unreserve();
      ctx.reserved = false;
      const domain = ctx.quotaDomain;
      if (domain !== undefined) {
        ctx.quotaDomain = undefined;
        const quota = this.deps.quota;
        if (quota) await (kept ? quota.keep(domain) : quota.unreserve(domain));
      }
    }
  }

  /** The queue call and what follows from its answer; true when a page reservation is kept. */
  private async carryOut(ctx: LeaseContext, outcome: Outcome, committed?: Promise<LeaseOutcome>): Promise<boolean> {
    const { lease } = ctx;
    const { queue, tally } = this.deps;
    switch (outcome.kind) {
      case 'commit':
        return this.ended(ctx, await (committed ?? queue.commit(lease)), 'commit', outcome.tallies, outcome.record) && outcome.page;
      case 'retry':
        return this.retry(ctx, outcome);
      case 'release': {
        const r = await queue.release(lease);
        this.leaseOutcome(r === 'ok' ? 'released' : 'stale');
        tally.addAll(lease.queue, outcome.tallies);
        if (r === 'ok') tally.add(lease.queue, 'released');
        return false;
      }
      case 'fail':
        this.ended(ctx, await queue.fail(lease, outcome.reason), 'fail', outcome.tallies, outcome.record);
        return false;
      case 'revisit':
        return this.ended(ctx, await queue.revisit(lease, { delayMs: outcome.delayMs, item: outcome.item }), 'commit', outcome.tallies, outcome.record);
      case 'moved':
        // (Its output line comes from the server it moved to.)
        this.ended(ctx, await queue.commit(lease), 'commit', outcome.tallies, null);
        return false;
      case 'pause':
        this.deps.pauses?.note(lease.queue, 'retry-after', await queue.pause(lease.arena, lease.queue, outcome.ms));
        this.deps.log?.info({ domain: lease.queue, reason: outcome.reason }, 'server asked to slow down: domain paused');
        return this.retry(ctx, { kind: 'retry', delayMs: outcome.ms, countAttempt: false, reason: outcome.reason, tallies: outcome.tallies, ...(outcome.item ? { item: outcome.item } : {}) });
    }
  }

  private async retry(ctx: LeaseContext, outcome: Extract<Outcome, { kind: 'retry' }>): Promise<boolean> {
    const { lease } = ctx;
    const r = await this.deps.queue.retry(lease, { delayMs: outcome.delayMs, countAttempt: outcome.countAttempt, reason: outcome.reason, ...(outcome.item ? { item: outcome.item } : {}) });
    this.leaseOutcome(r === 'ok' ? 'retried' : r);
    if (r === 'stale') return this.stale(ctx, 'retry');
    this.deps.tally.addAll(lease.queue, outcome.tallies);
    if (r === 'dead') {
      this.deps.tally.add(lease.queue, 'errors');
      this.write(ctx, { ...outcome.record, error: `gave up after ${lease.attempt} attempts: ${outcome.reason}` });
    } else {
      this.deps.log?.debug({ url: ctx.item?.url, reason: outcome.reason, delayMs: outcome.delayMs, attempt: lease.attempt }, 'will retry');
    }
    return false;
  }

  private leaseOutcome(outcome: 'committed' | 'stale' | 'retried' | 'released' | 'dead'): void {
    this.deps.metrics?.leases.inc({ outcome });
  }

  /** The lease had expired: its URL went to another worker, which will record it. */
  /** A lease ended for good by `call` (a commit, revisit or fail): when it took, its tallies and output line; whether it took. */
  private ended(ctx: LeaseContext, r: LeaseOutcome, call: 'commit' | 'fail', tallies: Tallies, record: Partial<PageRecord> | null): boolean {
    this.leaseOutcome(r !== 'ok' ? 'stale' : call === 'fail' ? 'dead' : 'committed');
    if (r !== 'ok') return this.stale(ctx, call);
    this.deps.tally.addAll(ctx.lease.queue, tallies);
    if (record) this.write(ctx, record);
    return true;
  }

  private stale(ctx: LeaseContext, call: string): false {
    this.deps.tally.add(ctx.lease.queue, 'stale');
    this.deps.log?.warn({ url: ctx.item?.url, call }, 'lease had expired: another worker has this URL now (no output line, no page counted here)');
    return false;
  }

  private write(ctx: LeaseContext, rec: Partial<PageRecord>): void {
    const { lease, item } = ctx;
    this.deps.out?.write({
      url: item?.url ?? lease.item,
      domain: ctx.domain ?? lease.queue,
      status: rec.status ?? null,
      contentType: rec.contentType ?? null,
      bytes: rec.bytes ?? 0,
      depth: item?.depth ?? 0,
      referrer: item?.referrer ?? null,
      fetchedAt: new Date().toISOString(),
      elapsedMs: rec.elapsedMs ?? 0,
      title: rec.title ?? null,
      links: rec.links ?? 0,
      enqueued: rec.enqueued ?? 0,
      redirect: rec.redirect ?? null,
      attempt: lease.attempt,
      error: rec.error ?? null,
      ...(item?.lastmod ? { lastmod: item.lastmod } : {}),
      ...(rec.sitemap ? { sitemap: rec.sitemap } : {}),
      ...(rec.revisit ? { revisit: rec.revisit } : {}),
      ...(this.deps.archiving ? { warc: rec.warc ?? null } : {}),
    });
  }
}
