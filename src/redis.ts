import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { WeirError } from './queue/errors.js';

export class RedisUnreachableError extends WeirError {
  constructor(where: string, detail: string) {
    super('WEIR_REDIS_UNREACHABLE', `cannot reach Redis at ${where}: ${detail}`);
    this.name = 'RedisUnreachableError';
  }
}

/** The URL with any password replaced, for logs and messages. */
export function redactRedisUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(unparseable Redis URL)';
  }
}

/**
 * Opens a Redis connection for a long-running process: it reconnects with
 * capped backoff forever (a restarted Redis must not kill workers) and
 * commands wait while it is down, but the first connection must succeed
 * within `connectTimeoutMs` or this throws RedisUnreachableError.
 */
export async function connectRedis(url: string, options: { connectTimeoutMs?: number; onReconnect?: (attempt: number, delayMs: number) => void } = {}): Promise<Redis> {
  const redisOptions: RedisOptions = {
    maxRetriesPerRequest: null,
    enableOfflineQueue: true,
    retryStrategy: (times) => {
      const delay = Math.min(5000, 100 * 2 ** Math.min(times, 6));
      options.onReconnect?.(times, delay);
      return delay;
    },
    lazyConnect: true,
  };
  const client = new Redis(url, redisOptions);
  client.on('error', () => undefined); // reported through onReconnect and command failures
  const timeoutMs = options.connectTimeoutMs ?? 5000;
  try {
    await Promise.race([
      client.connect(),
      new Promise((_, reject) => setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs)),
    ]);
    await client.ping();
  } catch (err) {
    client.disconnect();
    throw new RedisUnreachableError(redactRedisUrl(url), (err as Error).message);
  }
  return client;
}

export { Cluster, Redis };
