import { type FairQueue, type Lease } from '../../queue/index.js';
import { sleepUntil } from '../../sleep.js';
import { isWeirError } from '../../errors.js';
import type { Fetcher, SendGate } from '../fetch/index.js';
import type { LinkFollower } from '../links/index.js';
import { release, type Outcome, type SendPacer, type SlotSend } from '../lease/index.js';
import type { PauseNotes } from '../store/index.js';
import { ROBOTS } from './cache.js';
import type { HopGates, RobotsFetcher } from './fetch.js';
import type { RobotsGate } from './gate.js';
import type { Seed } from '../seed/index.js';
import { serverAddress } from '../servers/index.js';

/**
 * The send gates of robots.txt's hops (RFC 9309: redirects followed inline).
 * Each hop is a request to the site: the first goes in its lease's slot
 * (`send`), each later one an interval (plus the margin) after the write
 * before it, by this process's clock. The domain is paused for everyone
 * else while robots.txt is fetched (RobotsHold), so only these hops need
 * spacing, and lastWrite() is where its next slot counts from.
 */
export function robotsHops(send: SlotSend): { gateOf: HopGates; lastWrite: () => number } {
  let last = send.plannedAt;
  const track = (inner: SendGate | undefined): SendGate => ({
    mayGo: (at) => inner?.mayGo(at) ?? true,
    wrote: (at) => {
      last = Math.max(last, at);
      inner?.wrote(at);
    },
  });
  return {
    gateOf: async (hop, signal) => {
      if (hop === 0) return track(send);
      if (send.lease.intervalMs > 0) await sleepUntil(last + send.lease.intervalMs + send.marginMs, signal);
      return track(undefined);
    },
    lastWrite: () => last,
  };
}

/**
 * A domain paused, and its origin's robots.txt lock held by this worker,
 * while robots.txt is fetched: both last ROBOTS.lockMs and are renewed
 * every third of that until end(), so a worker that dies mid-fetch holds
 * the domain up for ROBOTS.lockMs at most. end() moves the pause to when
 * the domain's next request may go, then frees the lock, whatever fails.
 */
export class RobotsHold {
  /** The end of this worker's pause (Redis ms), or null once another pause has taken it over. */
  private pauseEnd: number | null;
  private renewing: Promise<unknown> = Promise.resolve();
  private readonly timer: NodeJS.Timeout;

  private constructor(
    private readonly queue: FairQueue,
    private readonly gate: RobotsGate,
    private readonly arena: string,
    private readonly domain: string,
    private readonly origin: string,
    pauseEnd: number,
  ) {
    this.pauseEnd = pauseEnd;
    this.timer = setInterval(() => {
      this.renewing = this.renew();
    }, ROBOTS.lockMs / 3);
  }

  /** Pauses the domain (the robots.txt lock is taken already: RobotsGate.check). */
  static async start(queue: FairQueue, gate: RobotsGate, arena: string, domain: string, origin: string): Promise<RobotsHold> {
    try {
      return new RobotsHold(queue, gate, arena, domain, origin, await queue.pause(arena, domain, ROBOTS.lockMs));
    } catch (err) {
      await gate.done(origin).catch(() => undefined);
      throw err;
    }
  }

  get pausedUntil(): number | null {
    return this.pauseEnd;
  }

  private async renew(): Promise<void> {
    await this.gate.renew(this.origin).catch(() => undefined);
    if (this.pauseEnd === null) return;
    try {
      const r = await this.queue.repause(this.arena, this.domain, this.pauseEnd, ROBOTS.lockMs);
      this.pauseEnd = r.moved ? r.end : null;
    } catch {
      // Redis trouble: the pause lapses at its end; the last move still stands.
    }
  }

  /** The pause moved to `resumeInMs` from now (unless another pause took it over), then the lock freed. */
  async end(resumeInMs: number): Promise<void> {
    clearInterval(this.timer);
    // (A renewal in flight lands first, or the move below would not find the end it expects.)
    await this.renewing;
    try {
      if (this.pauseEnd !== null) await this.queue.repause(this.arena, this.domain, this.pauseEnd, resumeInMs);
    } finally {
      await this.gate.done(this.origin);
    }
  }
}

export interface RobotsSlotDeps {
  queue: FairQueue;
  pacer: SendPacer;
  gate: RobotsGate;
  robots: RobotsFetcher;
  fetcher: Fetcher;
  pauses: PauseNotes;
  links: LinkFollower;
  seed: Seed;
}

/**
 * robots.txt, in the slot of the URL that found it missing, with the domain
 * held (RobotsHold) meanwhile, so no slot is served (and wasted) on URLs
 * that would have to wait for it; the hold ends one interval (or the
 * Crawl-delay) after robots.txt's last hop went out. The URL goes back to
 * the head of its queue for the next slot.
 */
export async function fetchRobotsInSlot(d: RobotsSlotDeps, lease: Lease, origin: string, failures: number, signal: AbortSignal): Promise<Outcome> {
  const hold = await RobotsHold.start(d.queue, d.gate, d.seed.arena, lease.queue, origin);
  if (hold.pausedUntil !== null) d.pauses.note(lease.queue, 'robots', hold.pausedUntil);
  let resumeInMs = 0;
  let send: SlotSend | null = null;
  try {
    const robotsUrl = `${origin}/robots.txt`;
    send = await d.pacer.hold(lease, signal, d.fetcher.prepare(robotsUrl, serverAddress(lease.queue)));
    if (send === null) return release();
    const hops = robotsHops(send);
    const got = await d.robots.fetch(origin, lease.queue, failures, signal, hops.gateOf);
    const gapMs = Math.max(lease.intervalMs, (got.crawlDelay ?? 0) * 1000);
    // (On Redis's clock the write may have been up to u later than its mapping says.)
    const clock = d.queue.clockOf(lease.shard);
    const nextSend = clock.toRedis(Math.max(hops.lastWrite(), send.plannedAt)) + clock.uncertaintyMs + gapMs + send.marginMs + 1;
    resumeInMs = Math.max(0, Math.ceil(nextSend - clock.toRedis(performance.now())));
    // Found by crawling: their pages are one step from the site (depth 1), and may be on this host (which vouches for them) or the sitemap's own.
    const listed = d.seed.sitemaps !== false && got.sitemaps.length > 0 ? await d.links.sitemaps(got.sitemaps, { base: robotsUrl, level: 0, depth: 1, vouchedBy: new URL(origin).host, hosts: null }) : { enqueued: 0, ignored: 0 };
    return release([['robotsFetches', 1], ['enqueued', listed.enqueued], ['sitemapIgnored', listed.ignored]]);
  } catch (err) {
    // Not sent (too late for the slot) or stopped: nothing learnt, the URL goes back.
    if (isWeirError(err, 'WEIR_LATE') || signal.aborted) return release();
    throw err;
  } finally {
    send?.done();
    await hold.end(resumeInMs);
  }
}
