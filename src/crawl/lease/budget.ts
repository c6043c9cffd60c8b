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

/** Domains a worker remembers as at their quota; past this many it forgets them and learns again from Redis. */
const FULL_DOMAINS_KEPT = 100_000;

/**
 * maxPagesPerDomain, exact across every worker: a page is reserved for its
 * domain (field "<domain>" of one hash, HINCRBY) before its fetch, kept
 * ("<domain>:kept") when the fetch ends in a page, handed back when it does
 * not. A URL refused while some of its domain's reservations are still in
 * flight waits (one of them may be handed back); one refused when the
 * domain has kept its quota is skipped, and the domain is remembered as
 * full (onFull), so links to it are dropped before they are queued.
 */
export class DomainQuota {
  private readonly full = new Set<string>();

  constructor(
    private readonly redis: RedisClient,
    private readonly key: string,
    private readonly max: number | null,
    /** Called once per domain as this worker learns it is full (the worker drops its queued URLs then). */
    private readonly onFull: (domain: string) => void = () => undefined,
  ) {}

  get limited(): boolean {
    return this.max !== null;
  }

  /** Known (to this worker) to have kept its quota of pages. */
  isFull(domain: string): boolean {
    return this.full.has(domain);
  }

  /** 'ok' reserved; 'wait' refused while reservations are in flight; 'full' the domain kept its quota. */
  async reserve(domain: string): Promise<'ok' | 'wait' | 'full'> {
    if (this.max === null) return 'ok';
    if (this.full.has(domain)) return 'full';
    const n = await this.redis.hincrby(this.key, domain, 1);
    if (n <= this.max) return 'ok';
    await this.redis.hincrby(this.key, domain, -1);
    const kept = Number((await this.redis.hget(this.key, `${domain}:kept`)) ?? 0);
    if (kept < this.max) return 'wait';
    if (this.full.size >= FULL_DOMAINS_KEPT) this.full.clear();
    this.full.add(domain);
    this.onFull(domain);
    return 'full';
  }

  /** The reservation's fetch ended in a page. */
  async keep(domain: string): Promise<void> {
    if (this.max !== null) await this.redis.hincrby(this.key, `${domain}:kept`, 1);
  }

  /** The reservation's fetch ended in no page. */
  async unreserve(domain: string): Promise<void> {
    if (this.max !== null) await this.redis.hincrby(this.key, domain, -1);
  }
}
