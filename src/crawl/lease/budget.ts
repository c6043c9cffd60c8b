import type { RedisClient } from '../../queue/index.js';

/**
 * maxPages, counted exactly across every worker: a page is reserved in
 * Redis (INCR) before its fetch and handed back (DECR) when the fetch ends
 * in no page. Without a maxPages every reservation succeeds, free.
 */
export class PageBudget {
  constructor(
    private readonly redis: RedisClient,
    private readonly key: string,
    private readonly maxPages: number | null,
  ) {}

  get limited(): boolean {
    return this.maxPages !== null;
  }

  /** Reserves one page; false when the budget is spent (nothing reserved then). */
  async reserve(): Promise<boolean> {
    if (this.maxPages === null) return true;
    const n = await this.redis.incr(this.key);
    if (n <= this.maxPages) return true;
    await this.redis.decr(this.key);
    return false;
  }

  /** Reserves up to `n` at once; how many it got (0 when the budget is spent). */
  async reserveUpTo(n: number): Promise<number> {
    if (this.maxPages === null) return n;
    if (n <= 0) return 0;
    const total = await this.redis.incrby(this.key, n);
    const over = Math.min(n, Math.max(0, total - this.maxPages));
    if (over > 0) await this.redis.decrby(this.key, over);
    return n - over;
  }

  /** Hands a reservation back: its fetch ended in no page. */
  async unreserve(): Promise<void> {
    if (this.maxPages !== null) await this.redis.decr(this.key);
  }

  /** Hands `n` reservations back at once (what they were for turned out not to be needed). */
  async unreserveMany(n: number): Promise<void> {
    if (this.maxPages !== null && n > 0) await this.redis.decrby(this.key, n);
  }

  /** Pages counted so far (reserved ones included). */
  async used(): Promise<number> {
    return Number((await this.redis.get(this.key)) ?? 0);
  }

  async spent(): Promise<boolean> {
    return this.maxPages !== null && (await this.used()) >= this.maxPages;
  }
}
