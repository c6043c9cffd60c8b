import type { FairQueue } from '../../queue/index.js';
import type { AdaptivePace } from '../seed/index.js';

/**
 * The seed's adaptivePace: each fetch's time and health (a 5xx, a 429, a
 * timeout or a failed connection is not healthy) reported to its domain's
 * queue, whose interval learns from every worker's reports at once
 * (lua/pace.lua). Off (no reports, no cost) when the seed does not ask.
 */
export class SitePace {
  constructor(
    private readonly queue: FairQueue,
    private readonly arena: string,
    private readonly config: AdaptivePace | null,
    /** The pace in force after a report, requests/s (0: unlimited): for the status page's history. */
    private readonly onPace: (domain: string, rate: number) => void = () => undefined,
  ) {}

  /** Reports one fetch; a failed report is dropped (the pace learns from the next). */
  async observe(domain: string, ms: number, healthy: boolean): Promise<void> {
    if (!this.config) return;
    const intervalMs = await this.queue.reportPace(this.arena, domain, { ms, healthy, ...this.config }).catch(() => null);
    if (intervalMs !== null) this.onPace(domain, intervalMs > 0 ? Number((1000 / intervalMs).toPrecision(6)) : 0);
  }
}
