import { holdsForReport, type Lease, type LeaseOutcome } from '../../queue/index.js';
import { sleepUntil } from '../../sleep.js';
import type { SendGate } from '../fetch/index.js';
import type { TallyName } from '../counters/index.js';

export const PACING = {
  /**
   * Leases are taken up to this long before their slot (the queue's
   * `aheadMs`): a lane holds its lease to the slot, so the dequeue call's own
   * delay costs no pace. Long enough that a lane done with a page mostly
   * finds its next lease in the call that commits it, and sleeps once, to
   * the slot, instead of waking for a dequeue and again for the slot (at
   * 2/s a worker's CPU a page fell 15 % from 20 ms to 250, no lower beyond:
   * docs/benchmarks.md). A domain's next slot is served only after its last
   * send is reported, so a domain has at most one lease held ahead; one held
   * by the worker that meets a Retry-After for its domain is not sent
   * (SendPacer.notePause).
   */
  aheadMs: 250,
  /**
   * Added to the interval after each reported send (lua/sent.lua), at any
   * rate (SendPacer.margin), unless the seed sets its own
   * (sendMarginMs): what may take a gap away between the writes and the
   * site's judgement of them. A strict server's clock: nginx's limit_req
   * reads CLOCK_MONOTONIC_COARSE, which moves in kernel ticks (4 ms at
   * HZ=250, Debian's default), so it may see a 504 ms gap as 500. And
   * delivery: a request may reach the site, or be read by it, later than
   * the one before it did (docs/politeness.md has the measured spread). The
   * send itself needs none: the next slot is counted from the report,
   * which follows the write. It is not cut at high rates: a tenth of the
   * interval (5 ms at 20/s) was refused by nginx in one full run of three
   * (gaps of 48 and 39 ms after writes at least 55 ms apart: the judge lags
   * as a whole now and then, 16–18 ms seen, whatever the rate).
   */
  marginMs: 25,
  /**
   * The send window the worker takes its leases with: the queue holds a
   * domain's next slot until the report, or until one interval after this
   * much past the slot (a dead worker's hold), renewed while a request's
   * connection is still being made (stillSending).
   */
  sendWindowMs: 3000,
  /**
   * A request is not written later than its send window less this (at
   * most a third of the window), after its slot or the window's last
   * renewal: past the window the next slot may go to another worker.
   */
  windowSlackMs: 1000,
  /** A write this much past its slot counts as late (lateSends): harmless, the next slot is counted from it. */
  lateWriteMs: 5,
  /**
   * At intervals of this much and more, a held request may go up to 1 ms
   * after its slot rather than risk a timer that fires early and must be
   * armed again (a second wake of the worker: about a third of the holds
   * did, at 2/s). The millisecond is at most 0.5 % of such an interval's pace.
   */
  lateHoldFromMs: 200,
} as const;

/**
 * Told of each request's write (local ms: the slot it was held to, and the
 * write): what lets a site's own log be checked against what was sent
 * (the worker's debug log; the strict-server tests read it).
 */
export type WriteTrace = (lease: Lease, plannedAt: number, wroteAt: number) => void;

/** Pauses notePause keeps before it drops those that ended. */
const MAX_PAUSES_KEPT = 1000;

/** How many times hold() waits again when the clock's estimate moves the slot later while it waits. */
const MAX_CLOCK_LOOKS = 3;

/** This process's clock (performance.now()), replaceable in tests. */
export interface LocalClock {
  now(): number;
  sleepUntil(at: number, signal?: AbortSignal, lateMs?: number): Promise<void>;
}

export const realClock: LocalClock = { now: () => performance.now(), sleepUntil };

/** A shard's clock as seen here (src/queue/clock.ts). */
export interface ShardClock {
  readonly uncertaintyMs: number;
  toRedis(localMs: number): number;
  toLocal(redisMs: number): number;
}

/** What the pacer needs of the queue: each shard's clock as seen here, and the send report. */
export interface SlotQueue {
  clockOf(shard: string): ShardClock;
  reportSent(lease: Lease, wasSent: boolean, marginMs?: number): void;
  stillSending(lease: Lease, windowMs: number): Promise<LeaseOutcome>;
}

/**
 * One lease's request, held to its slot: the send gate undici consults as
 * it writes (fetch/fetcher.ts), and the report of the write to the queue. Exactly
 * one report per lease of a rate-limited queue: written, or (done() with no
 * write) not sent. A request whose write began but was never seen to end
 * counts as sent.
 */
export class SlotSend implements SendGate {
  private reported = false;
  private attempted = false;

  constructor(
    private readonly pacer: SendPacer,
    readonly lease: Lease,
    /** When the slot came, local ms (the planned send time). */
    readonly plannedAt: number,
  ) {}

  mayGo(at: number): boolean {
    if (this.pacer.pastWindow(this.lease, at)) {
      this.pacer.count(this.lease.queue, 'lateSlots');
      return false;
    }
    // (Its domain asked this worker to slow down since the lease was taken: not sent, handed back.)
    if (this.pacer.pausedAt(this.lease.queue, at)) return false;
    this.attempted = true;
    return true;
  }

  /** The margin this send's next slot gets after its write (SendPacer.margin). */
  get marginMs(): number {
    return this.pacer.margin();
  }

  wrote(at: number): void {
    if (at - this.plannedAt > PACING.lateWriteMs) this.pacer.count(this.lease.queue, 'lateSends');
    this.pacer.traceWrite?.(this.lease, this.plannedAt, at);
    this.report(true);
  }

  /** The lease is done with its request: reports it not sent, unless a write was reported (or begun). */
  done(): void {
    this.report(this.attempted);
  }

  private report(wasSent: boolean): void {
    if (this.reported) return;
    this.reported = true;
    this.pacer.report(this.lease, wasSent);
  }
}

/**
 * Holds each request to its slot and reports it as it goes out. The queue
 * (taken with a send window: PACING, worker.ts) serves a rate-limited
 * domain's next slot only after that report, counted from it on Redis's
 * clock: so two requests to a domain are written at least an interval (and
 * the margin) apart whichever workers send them and whatever stalls one of
 * them, with no lateness to judge or push here. Scrapy's downloader slot,
 * shared through Redis: the delay is Redis's, the send time this object's.
 */
export class SendPacer {
  /** Each lease's send, from hold() until finish(). */
  private readonly sends = new WeakMap<Lease, SlotSend>();
  /** Per lease, where its send window counts from when renewed (Redis ms; else its servedAt), or -Infinity once lost. */
  private readonly windowFrom = new WeakMap<Lease, number>();
  /** Per queue, until when (local ms) its domain asked this worker to pause (notePause). */
  private readonly pausedUntil = new Map<string, number>();

  constructor(
    private readonly queue: SlotQueue,
    private readonly windowMs: number,
    readonly count: (domain: string, name: TallyName) => void,
    private readonly clock: LocalClock = realClock,
    /** The seed's sendMarginMs (null: PACING.marginMs). */
    private readonly marginMs: number | null = null,
    readonly traceWrite?: WriteTrace,
  ) {}

  /**
   * A response of `queue`'s domain asked for a pause of `ms` (Retry-After):
   * this worker's requests to it held ahead of their slots are not sent
   * meanwhile. (The queue is paused in Redis as the lease settles; a lease
   * taken before that would otherwise still go at its slot.)
   */
  notePause(queue: string, ms: number): void {
    const until = this.clock.now() + ms;
    if (until > (this.pausedUntil.get(queue) ?? 0)) this.pausedUntil.set(queue, until);
    // (Bounded: ended pauses are dropped as new ones come.)
    if (this.pausedUntil.size > MAX_PAUSES_KEPT) for (const [q, t] of this.pausedUntil) if (t <= this.clock.now()) this.pausedUntil.delete(q);
  }

  /** Whether a request to `queue` written at `at` (local ms) would be inside a pause noted here. */
  pausedAt(queue: string, at: number): boolean {
    return (this.pausedUntil.get(queue) ?? 0) > at;
  }

  /** The margin after a write, whatever the queue's rate: the seed's sendMarginMs if it sets one, else PACING.marginMs. */
  margin(): number {
    return this.marginMs ?? PACING.marginMs;
  }

  /**
   * Waits for the lease's slot; resolves its send (gate and report), or
   * null when the slot cannot be used (its window has passed, or `signal`
   * aborted): the lease goes back, reported unsent. Unlimited domains have
   * no slot: no wait, nothing to report.
   */
  async hold(lease: Lease, signal?: AbortSignal, ready?: Promise<void>): Promise<SlotSend | null> {
    if (lease.intervalMs === 0) {
      await ready;
      return new SlotSend(this, lease, this.clock.now());
    }
    if (ready && holdsForReport(lease)) await this.renewWhile(lease, ready);
    else await ready;
    // The slot's time on this clock is known to within ±u (half the best round
    // trip seen): wait for its latest possible time, so a request is never
    // early. The slot is mapped with the clock's estimate of now, never the
    // one its lease came with (lease.localServedAt): the estimate and its u
    // change together, and an old estimate's error can be far more than
    // today's u. Should the estimate move the slot later while this waits,
    // it waits again (a bounded number of times).
    const clock = this.queue.clockOf(lease.shard);
    const latest = (): number => clock.toLocal(lease.servedAt) + clock.uncertaintyMs;
    let sendAt = latest();
    for (let looks = 0; ; looks++) {
      await this.clock.sleepUntil(sendAt, signal, lease.intervalMs >= PACING.lateHoldFromMs ? 1 : 0);
      if (signal?.aborted || looks === MAX_CLOCK_LOOKS) break;
      const newest = latest();
      if (newest <= sendAt) break;
      sendAt = newest;
    }
    const send = new SlotSend(this, lease, sendAt);
    this.sends.set(lease, send);
    const late = !signal?.aborted && this.pastWindow(lease, this.clock.now());
    if (late) this.count(lease.queue, 'lateSlots');
    if (signal?.aborted || late) {
      send.done();
      return null;
    }
    return send;
  }

  /**
   * The lease is settled: its send is reported if it was not (a lease
   * handed back, committed or retried without a request of its own, as a
   * robots.txt wait or a disallowed URL is, reports it never sent: the
   * queue frees the next slot at once instead of at the window's end).
   */
  finish(lease: Lease): void {
    let send = this.sends.get(lease);
    if (!send) {
      send = new SlotSend(this, lease, this.clock.now());
      this.sends.set(lease, send);
    }
    send.done();
  }

  /**
   * Waits for `ready` (the request's connection being made), renewing the
   * lease's send window every third of it meanwhile, so a slow connect is
   * not cut off while a dead worker's hold still lapses within a window.
   */
  private async renewWhile(lease: Lease, ready: Promise<void>): Promise<void> {
    let done = false;
    const settled = ready.then(
      () => (done = true),
      () => (done = true),
    );
    const every = this.windowMs / 3;
    for (;;) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([settled, new Promise<void>((r) => (timer = setTimeout(r, every)))]);
      // (Cleared, not left to fire a second after every request for nothing.)
      clearTimeout(timer);
      if (done) return;
      const clock = this.queue.clockOf(lease.shard);
      // (The renewal counts from no later than Redis's time as it is sent.)
      const from = clock.toRedis(this.clock.now()) - clock.uncertaintyMs;
      const kept = await this.queue.stillSending(lease, this.windowMs).catch(() => 'stale' as const);
      this.windowFrom.set(lease, kept === 'ok' ? from : -Infinity);
      if (kept !== 'ok') {
        await settled;
        return;
      }
    }
  }

  /** Whether a write at `at` (local ms) would be past the lease's send window (less its slack). */
  pastWindow(lease: Lease, at: number): boolean {
    if (!holdsForReport(lease)) return false;
    const slack = Math.min(PACING.windowSlackMs, this.windowMs / 3);
    const clock = this.queue.clockOf(lease.shard);
    return clock.toRedis(at) + clock.uncertaintyMs > (this.windowFrom.get(lease) ?? lease.servedAt) + this.windowMs - slack;
  }

  /** Tells the queue (one call, not awaited: a lost report only holds the next slot to its window's end). */
  report(lease: Lease, wasSent: boolean): void {
    if (!holdsForReport(lease)) return;
    this.queue.reportSent(lease, wasSent, this.margin());
  }
}
