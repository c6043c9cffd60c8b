import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { WeirError } from './errors.js';

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
 * Opens a Redis connection for a long-running process: once connected it
 * reconnects with capped backoff forever (a restarted Redis must not kill
 * workers) and commands wait while it is down. The first connection is
 * tried for up to `waitMs` (default 0: one try of `connectTimeoutMs`), with
 * capped backoff between tries reported through `onRetry`; then this throws
 * RedisUnreachableError.
 */
export async function connectRedis(
  url: string,
  options: {
    connectTimeoutMs?: number;
    waitMs?: number;
    onReconnect?: (attempt: number, delayMs: number) => void;
    onRetry?: (attempt: number, delayMs: number, error: string) => void;
  } = {},
): Promise<Redis> {
  const started = Date.now();
  for (let attempt = 1; ; attempt++) {
    try {
      return await connectOnce(url, options);
    } catch (err) {
      const delay = Math.min(5000, 200 * 2 ** Math.min(attempt - 1, 5));
      if (Date.now() - started + delay > (options.waitMs ?? 0)) throw err;
      options.onRetry?.(attempt, delay, (err as Error).message);
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}

async function connectOnce(url: string, options: { connectTimeoutMs?: number; onReconnect?: (attempt: number, delayMs: number) => void }): Promise<Redis> {
  const redisOptions: RedisOptions = {
    maxRetriesPerRequest: null,
    enableOfflineQueue: true,
    // Reconnect quickly (every 0.5 s at most): a crawl's pace is lost for as
    // long as Redis is away, so a restart should cost its own downtime, not a
    // backoff's seconds more. A refused connection on a live network is cheap.
    retryStrategy: (times) => {
      const delay = Math.min(500, 50 * 2 ** Math.min(times, 4));
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
