import { sleepUntil, type Lease } from '../queue/index.js';
import type { SendGate } from './fetch.js';
import type { TallyName } from './tally.js';

export const PACING = {
  /**
   * A slot's request is sent this long after its slot, and only if it can go
   * within sendSlackMs of that (counting the clock's uncertainty): so the
   * gaps a server sees are the gaps Redis decided, whatever each worker did
   * in between (robots lookup, an event loop busy parsing a big page), short
   * by at most the slack. Later than that, the domain's next slot is pushed
   * out by the lateness first if it has not been handed out yet; otherwise
   * the slot is handed back unused: politeness over throughput.
   */
  sendDelayMs: 2,
  /** Within the 5 ms a server may see a gap short by (timer overshoot, the clock's ± spread). */
  sendSlackMs: 3,
  /**
   * Leases are taken up to this long before their slot (the queue's
   * `aheadMs`): a lane holds its lease to the slot, so the dequeue call's own
   * delay costs no pace, and the send delay above only has to cover a lease
   * served late (its queue had been idle).
   */
  aheadMs: 20,
  /** What a pause call itself may add to a late send's lateness, ms. */
  pauseCoverMs: 5,
  /**
   * A push sent as a late request goes out (the send gate) counts only if the
   * domain's next slot is handed out at least this much later: time for the
   * pause call to land first, even on a loaded machine.
   */
  pushMarginMs: 50,
  /**
   * A request whose headers would reach the socket later than this after
   * their planned time goes only if a push of the next slot surely lands
   * before that slot is handed out (see gate()); else it is not sent.
   */
  maxWriteLateMs: 3,
  /**
   * A request is not sent (its lease goes back) when this worker wrote the
   * domain's previous request less than its interval minus this long
   * before: that one went late (a stall inside its write), after the next
   * slot was out (see gate()).
   */
  writeGapSlackMs: 5,
} as const;

/** Domains whose last write is remembered past this many before older ones are dropped. */
const MAX_WRITES_KEPT = 10_000;

/**
 * An interval no longer than the send slack (above 333/s): however late a
 * request goes, the gap after the one before is short by at most the
 * interval itself, so at most the slack. Such requests still never go
 * before their slot, but go without the send delay and without lateness
 * checks (which would only hand slots back for nothing).
 */
const tinyInterval = (lease: Lease): boolean => lease.intervalMs <= PACING.sendSlackMs;

/** The gate of a request with no gap to keep (unlimited, or an interval within the slack). */
const OPEN_GATE: SendGate = { mayGo: () => true, wrote: () => undefined };

/** How many times hold() waits again when the clock's estimate moves the slot later while it waits. */
const MAX_CLOCK_LOOKS = 3;

/** When the domain's next slot may be handed out (Redis ms): slots go out aheadMs before their time. A push must land before it. */
const nextHandedOut = (lease: Lease): number => lease.servedAt + lease.intervalMs - PACING.aheadMs;

/** This process's clock (performance.now()), replaceable in tests. */
export interface LocalClock {
  now(): number;
  sleepUntil(at: number, signal?: AbortSignal): Promise<void>;
}

export const realClock: LocalClock = { now: () => performance.now(), sleepUntil };

/** What the pacer needs of the queue: Redis's clock as seen here, and pausing a queue. */
export interface SlotQueue {
  readonly clock: { readonly uncertaintyMs: number; toRedis(localMs: number): number; toLocal(redisMs: number): number };
  pause(arena: string, queue: string, ms: number): Promise<number>;
}

/**
 * Holds each request to its slot: sends at a fixed offset from the moment
 * Redis served the slot, and when a request goes out late anyway, pushes
 * the domain's next slot so the gap after it is still whole. Scrapy's
 * downloader slot, shared through Redis: the delay is Redis's, the send
 * time this object's.
 */
export class SendPacer {
  /** Per domain: this worker's latest write of a paced request (local ms), and the interval it kept. */
  private readonly lastWrite = new Map<string, { at: number; intervalMs: number }>();

  constructor(
    private readonly queue: SlotQueue,
    private readonly arena: string,
    private readonly count: (domain: string, name: TallyName) => void,
    private readonly clock: LocalClock = realClock,
  ) {}

  /**
   * Waits for the slot's send time; resolves the planned send time (local
   * clock), or null when the slot cannot be kept (the lease must go back
   * unused) or `signal` aborted. On time (within sendSlackMs): go. Late (the
   * event loop was busy): the request may still go if the domain's next
   * slot can be pushed out by the lateness first, so the gap after it is
   * whole. Unlimited domains have no gaps to keep: no wait.
   */
  async hold(lease: Lease, signal?: AbortSignal): Promise<number | null> {
    if (lease.intervalMs === 0) return this.clock.now();
    // The slot's time on this clock is known to within ±u (half the best round
    // trip seen): wait for its latest possible time, so a request is never
    // early, and count the ±u spread as lateness the next slot must absorb.
    // The slot is mapped with the clock's estimate of now, never the one its
    // lease came with (lease.localServedAt): the estimate and its u change
    // together, and an old estimate's error can be far more than today's u
    // (on a loaded machine poor samples give way to a good one: by the old
    // mapping a request could go out that much before its slot). Should the
    // estimate move the slot later while this waits, it waits again (a
    // bounded number of times).
    const tiny = tinyInterval(lease);
    const latest = (): { at: number; u: number } => {
      const u = this.queue.clock.uncertaintyMs;
      return { at: this.queue.clock.toLocal(lease.servedAt) + (tiny ? 0 : PACING.sendDelayMs) + u, u };
    };
    let { at: sendAt, u } = latest();
    for (let looks = 0; ; looks++) {
      await this.clock.sleepUntil(sendAt, signal);
      if (signal?.aborted) return null;
      if (looks === MAX_CLOCK_LOOKS) break;
      const newest = latest();
      if (newest.at <= sendAt) break;
      ({ at: sendAt, u } = newest);
    }
    if (tiny) return Math.max(sendAt, this.clock.now());
    const late = this.clock.now() - sendAt + 2 * u;
    if (late <= PACING.sendSlackMs) return sendAt;
    // Push the domain's next slot out by the lateness (plus what the pause call
    // itself may add), while that slot has not been handed out (slots go out
    // aheadMs before their time); then send.
    const cover = late + PACING.pauseCoverMs;
    const nextOut = nextHandedOut(lease);
    if (this.queue.clock.toRedis(this.clock.now()) + cover < nextOut) {
      await this.pushNextSlot(lease, cover);
      const now = this.clock.now();
      if (now - sendAt <= cover && this.queue.clock.toRedis(now) < nextOut) {
        this.count(lease.queue, 'lateSends');
        // The pause already covers this much lateness.
        return sendAt + cover - 2 * u;
      }
    }
    this.count(lease.queue, 'lateSlots');
    return null;
  }

  /**
   * The pacer's say as undici writes the request (Fetcher's send gate).
   * mayGo, the last check before it leaves, made as its headers are
   * written: within maxWriteLateMs of the planned time, go. Later, go only
   * if the domain's next slot is far enough from being handed out that a
   * push by the lateness surely lands first (the push is sent as the
   * request goes); else don't send at all (the lease goes back unused). The
   * decision made in hold() can be undone by a busy event loop between it
   * and the write; this one cannot. wrote, told just after the write: the
   * process can still stall between the check and the write (preempted on
   * a loaded machine: 8-25 ms seen on two shared cores, the gap after the
   * request then short by as much at the server), so a write later than
   * the check allowed pushes the next slot too, if it is not out yet.
   */
  gate(lease: Lease, plannedAt: number): SendGate {
    if (lease.intervalMs === 0 || tinyInterval(lease)) return OPEN_GATE;
    const late = (at: number): number => at - plannedAt + 2 * this.queue.clock.uncertaintyMs;
    // What a push must cover: lateness past the slot's own send time, which
    // plannedAt is past already when hold() sent late (and pushed for that).
    const pastSlot = (at: number): number => this.queue.clock.toRedis(at) + this.queue.clock.uncertaintyMs - lease.servedAt - PACING.sendDelayMs;
    // How late past plannedAt a write may be with the gap after it kept
    // whole: the check's own allowance, or what its push covered.
    let covered: number = PACING.maxWriteLateMs;
    return {
      mayGo: (at) => {
        if (this.tooSoonAfterLastWrite(lease, at)) {
          this.count(lease.queue, 'lateSlots');
          return false;
        }
        const lateMs = late(at);
        if (lateMs <= covered) return true;
        const cover = pastSlot(at) + PACING.pauseCoverMs;
        if (this.queue.clock.toRedis(at) + cover + PACING.pushMarginMs < nextHandedOut(lease)) {
          this.count(lease.queue, 'lateSends');
          covered = lateMs + PACING.pauseCoverMs;
          void this.pushNextSlot(lease, cover).catch(() => undefined);
          return true;
        }
        this.count(lease.queue, 'lateSlots');
        return false;
      },
      wrote: (at) => {
        this.noteWrite(lease, at);
        const lateMs = late(at);
        if (lateMs <= covered) return;
        if (this.queue.clock.toRedis(at) < nextHandedOut(lease)) {
          this.count(lease.queue, 'lateSends');
          void this.pushNextSlot(lease, pastSlot(at) + 1).catch(() => undefined);
          return;
        }
        this.count(lease.queue, 'shortGaps');
      },
    };
  }

  /**
   * Whether a request of the lease's domain written at `at` would follow
   * this worker's previous write of that domain by less than the interval
   * (minus writeGapSlackMs). The previous one went late after its check
   * (a stall inside the write) when the next slot was out already (always
   * at 50/s and faster: slots go out aheadMs early), so the push wrote()
   * makes could not move it: the request of that next slot, if this worker
   * holds it, is not sent rather than crowd the late one. Another worker's
   * lease of it cannot know; the README says so.
   */
  private tooSoonAfterLastWrite(lease: Lease, at: number): boolean {
    const prev = this.lastWrite.get(lease.queue);
    return prev !== undefined && at < prev.at + Math.min(prev.intervalMs, lease.intervalMs) - PACING.writeGapSlackMs;
  }

  private noteWrite(lease: Lease, at: number): void {
    const prev = this.lastWrite.get(lease.queue);
    if (prev && prev.at >= at) return;
    this.lastWrite.delete(lease.queue);
    this.lastWrite.set(lease.queue, { at, intervalMs: lease.intervalMs });
    // (Oldest first, as a Map iterates: a write older than its interval can no longer crowd one.)
    if (this.lastWrite.size > MAX_WRITES_KEPT) {
      for (const [domain, w] of this.lastWrite) {
        if (this.lastWrite.size <= MAX_WRITES_KEPT / 2 || w.at + w.intervalMs >= at) break;
        this.lastWrite.delete(domain);
      }
    }
  }

  /**
   * A request `lateMs` later than its slot's send time: pause the domain so
   * its next slot comes no sooner than a full interval after this request
   * (Redis time: served + lateness + interval).
   */
  async pushNextSlot(lease: Lease, lateMs: number): Promise<void> {
    const until = lease.servedAt + lateMs + lease.intervalMs + 1;
    const ms = Math.ceil(until - this.queue.clock.toRedis(this.clock.now()));
    if (ms > 0) await this.queue.pause(this.arena, lease.queue, ms);
  }
}
