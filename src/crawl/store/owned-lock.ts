import type { RedisClient } from '../../queue/index.js';

const RENEW = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`;
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

/**
 * A lock in one Redis key whose value is its owner's token, with an expiry:
 * taken only when free (SET NX PX), renewed and released only by its owner
 * (compare, then PEXPIRE or DEL, in one script), so an owner slow enough to
 * have lost it never renews or frees a lock another has taken since. The
 * crawl lock (crawl-lock.ts) and the robots.txt fetch lock (robots/cache.ts).
 */
export const ownedLock = {
  async take(redis: RedisClient, key: string, token: string, ttlMs: number): Promise<boolean> {
    return (await redis.set(key, token, 'PX', ttlMs, 'NX')) === 'OK';
  },
  /** True while `token` still holds it (its expiry moved to ttlMs from now). */
  async renew(redis: RedisClient, key: string, token: string, ttlMs: number): Promise<boolean> {
    return Number(await redis.eval(RENEW, 1, key, token, ttlMs)) === 1;
  },
  /** True when `token` held it (now freed). */
  async release(redis: RedisClient, key: string, token: string): Promise<boolean> {
    return Number(await redis.eval(RELEASE, 1, key, token)) === 1;
  },
};
