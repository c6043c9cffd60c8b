import type { Logger } from 'pino';
import { type RedisClient, connectRedis, describeRedis, redactRedisUrl } from '../redis.js';
import { chooseRedis } from '../embedded-redis.js';
import { FairQueue } from '../queue/index.js';

const HOW = {
  flag: 'from --redis',
  env: 'from REDIS_URL',
  default: 'at the default address',
  'embedded-running': 'embedded, already running (data in .weir/redis/)',
  'embedded-started': 'embedded, started now (data in .weir/redis/, AOF on)',
} as const;

/** Picks the Redis (flag, REDIS_URL, the default address, else the embedded one); `said` is the line that says which. */
export async function pickRedis(flag: string | undefined): Promise<{ url: string; said: string; source: keyof typeof HOW }> {
  const choice = await chooseRedis(flag);
  const where = redactRedisUrl(choice.url);
  return { url: choice.url, said: `using Redis ${where} (${HOW[choice.source]})`, source: choice.source };
}

/** A queue must not be evicted: say so when Redis would. */
export async function warnEviction(redis: RedisClient, log: Logger): Promise<void> {
  try {
    const r = (await redis.config('GET', 'maxmemory-policy')) as string[];
    if (r[1] && r[1] !== 'noeviction') log.warn({ policy: r[1] }, `Redis maxmemory-policy is ${r[1]}: under memory pressure it may evict queued URLs; set it to noeviction`);
  } catch {
    // CONFIG may be disabled (managed Redis): nothing to check.
  }
}

/** The one log line that says where an arena lives: how many masters, how many shards. */
export async function sayPlacement(redis: RedisClient, queue: FairQueue, arena: string, log: Logger): Promise<void> {
  const { masters, said } = describeRedis(redis);
  const { shards } = await queue.layout(arena);
  log.info({ arena, masters, shards }, `arena ${arena} on ${said}: ${shards} shard${shards === 1 ? '' : 's'}`);
}

/** Connects, runs `fn` with the client and a queue, and closes both. */
export async function withQueue<T>(url: string, fn: (redis: RedisClient, queue: FairQueue) => Promise<T>): Promise<T> {
  const redis = await connectRedis(url);
  const queue = new FairQueue(redis);
  try {
    return await fn(redis, queue);
  } finally {
    await queue.close();
    redis.disconnect();
  }
}
