/**
 * Floors for what a page can cost Redis, measured beside a weir crawl
 * (BENCH_PART=redis of npm run bench:crawl): while the crawl runs, each page
 * its servers hand out is mirrored, at that moment, into two other fresh
 * redis-servers:
 *   - the seed design's scripts (bench/seed-design.ts) as its worker calls
 *     them for a page: enqueue the page's URL (every crawled page was
 *     enqueued once), dequeue it, commit it; no dedupe, no fairness, no
 *     pacing of its own beyond its rate table: a lower bound on what a
 *     crawler built on it would cost;
 *   - one script call a page that does nothing (`return 1`): the floor of
 *     any design that makes one call a page.
 * Both see the crawl's pace and the machine's load as weir's Redis does (the
 * workers parsing on the same cores), which is what sets a call's CPU cost
 * here: a Redis woken for each call, its caches cold from the workers.
 */
import type { Redis } from 'ioredis';
import { startRedis, type RedisServer } from '../test/helpers/redis.js';
import { redisUsage, type RedisUsage } from './redis-usage.js';
import { SeedDesignQueue } from './seed-design.js';

const ARENA = 'shadow';
const QUEUE = 'site';

/** Redis CPU s a contender spent, and on how many pages. */
export interface ShadowCost {
  cpu: number;
  pages: number;
  /** Script calls made (a contender's whole traffic). */
  calls: number;
}

interface Contender {
  server: RedisServer;
  client: Redis;
  /** INFO is read through its own connection, so its own calls are not the contender's. */
  meter: Redis;
  before: RedisUsage;
  /** A page's calls; resolves to how many it made. */
  page(url: string): Promise<number>;
  calls: number;
}

async function contender(make: (client: Redis) => Promise<(url: string) => Promise<number>>): Promise<Contender> {
  const server = await startRedis();
  const client = server.client();
  const meter = server.client();
  const page = await make(client);
  return { server, client, meter, before: await redisUsage(meter), calls: 0, page };
}

async function finish(c: Contender, pages: number): Promise<ShadowCost> {
  const after = await redisUsage(c.meter);
  // (destroy() disconnects the clients the server made.)
  await c.server.stop();
  await c.server.destroy();
  return { cpu: after.cpu - c.before.cpu, pages, calls: c.calls };
}

/** Mirrors the pages a crawl's servers hand out into both contenders until stopped. */
export class ShadowCalls {
  private seen = 0;
  private pages = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly inFlight = new Set<Promise<unknown>>();

  private constructor(
    private readonly log: { path: string; status: number }[],
    private readonly isPage: (r: { path: string; status: number }) => boolean,
    private readonly contenders: { seed: Contender; empty: Contender },
  ) {}

  static async start(log: { path: string; status: number }[], isPage: (r: { path: string; status: number }) => boolean): Promise<ShadowCalls> {
    const seed = await contender(async (client) => {
      const q = new SeedDesignQueue(client);
      // (Its rate table in calls a second: a delay of a microsecond, so every dequeue finds its item.)
      await q.defineRateLimits(ARENA, { [QUEUE]: 1e9 });
      return async (url) => {
        await q.enqueue(ARENA, QUEUE, url);
        const got = await q.dequeue(ARENA);
        if (!got) return 2;
        await q.commit(got.txnid);
        return 3;
      };
    });
    const empty = await contender((client) => Promise.resolve(async () => {
      await client.eval('return 1', 0);
      return 1;
    }));
    const s = new ShadowCalls(log, isPage, { seed, empty });
    s.seen = log.length;
    // (Polled every millisecond: each page's calls go within a millisecond of its serve.)
    s.timer = setInterval(() => s.poll(), 1);
    return s;
  }

  private poll(): void {
    for (; this.seen < this.log.length; this.seen++) {
      const r = this.log[this.seen];
      if (!r || !this.isPage(r)) continue;
      this.pages++;
      for (const c of [this.contenders.seed, this.contenders.empty]) {
        const p = c.page(r.path).then((n) => void (c.calls += n)).finally(() => this.inFlight.delete(p));
        this.inFlight.add(p);
      }
    }
  }

  /** Stops mirroring; what each contender's Redis spent. */
  async stop(): Promise<{ seed: ShadowCost; empty: ShadowCost }> {
    clearInterval(this.timer);
    this.poll();
    await Promise.all(this.inFlight);
    return { seed: await finish(this.contenders.seed, this.pages), empty: await finish(this.contenders.empty, this.pages) };
  }
}
