import { hostname } from 'node:os';
import { WeirError } from '../../errors.js';
import type { ArenaKeyMaker } from './keys.js';
import { ownedLock } from './owned-lock.js';
import type { RedisClient } from '../../queue/index.js';

/** Renewed every third of this while the crawl runs; a crawl that died frees its arena within it. */
const LOCK_TTL_MS = 30_000;


interface Owner {
  host: string;
  pid: number;
  startedAt: string;
}

/**
 * One `crawl` drives an arena at a time (kickoff, its workers, its --out
 * file): a lock in Redis with an owner and an expiry, renewed while the crawl
 * runs. Workers started with `weir worker` need none: many are the point.
 */
export class CrawlLock {
  private readonly timer: NodeJS.Timeout;

  private constructor(
    private readonly redis: RedisClient,
    private readonly key: string,
    private readonly token: string,
  ) {
    this.timer = setInterval(() => void ownedLock.renew(this.redis, this.key, this.token, LOCK_TTL_MS).catch(() => undefined), LOCK_TTL_MS / 3);
    this.timer.unref();
  }

  /** Takes the arena's crawl lock, or throws WEIR_ARENA_BUSY naming the crawl that holds it. */
  static async acquire(redis: RedisClient, queue: ArenaKeyMaker, arena: string): Promise<CrawlLock> {
    const key = queue.key(arena, 'crawllock');
    const owner: Owner = { host: hostname(), pid: process.pid, startedAt: new Date().toISOString() };
    const token = JSON.stringify(owner);
    if (await ownedLock.take(redis, key, token, LOCK_TTL_MS)) return new CrawlLock(redis, key, token);
    let other = 'another crawl';
    try {
      const o = JSON.parse((await redis.get(key)) ?? '') as Owner;
      other = `the crawl of pid ${o.pid} on ${o.host} (started ${o.startedAt})`;
    } catch {
      // expired meanwhile, or not ours to read: say so plainly
    }
    throw new WeirError('WEIR_ARENA_BUSY', `arena ${arena} is being crawled by ${other}: wait for it to end or stop it, or use another arena (its lock lapses ${LOCK_TTL_MS / 1000} s after that crawl dies)`);
  }

  async release(): Promise<void> {
    clearInterval(this.timer);
    await ownedLock.release(this.redis, this.key, this.token).catch(() => undefined);
  }
}
