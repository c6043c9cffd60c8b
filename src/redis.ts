import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { WeirError } from './errors.js';

export class RedisUnreachableError extends WeirError {
  constructor(where: string, detail: string) {
    super('WEIR_REDIS_UNREACHABLE', `cannot reach Redis at ${where}: ${detail}`);
    this.name = 'RedisUnreachableError';
  }
}

/** Query parameters of a Redis URL that may carry a credential. */
const SECRET_PARAM = /pass|secret|token|auth|key|cred/i;

/** The URL with any password replaced (in its user part or its query), for logs and messages. */
export function redactRedisUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    // ioredis also takes credentials as query parameters (?password=...).
    for (const key of [...u.searchParams.keys()]) if (SECRET_PARAM.test(key)) u.searchParams.set(key, '***');
    return u.toString();
  } catch {
    return '(unparseable Redis URL)';
  }
}

/** A single Redis or a Cluster: weir takes either, and says which (connectRedis). */
export type { RedisClient } from './queue/index.js';
import type { RedisClient } from './queue/index.js';

/**
 * Opens a Redis connection for a long-running process: once connected it
 * reconnects with capped backoff forever (a restarted Redis must not kill
 * workers) and commands wait while it is down. The first connection is
 * tried for up to `waitMs` (default 0: one try of `connectTimeoutMs`), with
 * capped backoff between tries reported through `onRetry`; then this throws
 * RedisUnreachableError. A node of a Redis Cluster (any node: INFO says
 * cluster_enabled) gives a Cluster client instead, which finds the others.
 */
export async function connectRedis(
  url: string,
  options: {
    connectTimeoutMs?: number;
    waitMs?: number;
    onReconnect?: (attempt: number, delayMs: number) => void;
    onRetry?: (attempt: number, delayMs: number, error: string) => void;
  } = {},
): Promise<RedisClient> {
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

async function connectOnce(url: string, options: { connectTimeoutMs?: number; onReconnect?: (attempt: number, delayMs: number) => void }): Promise<RedisClient> {
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
    await within(client.connect(), timeoutMs, 'no answer');
    await client.ping();
    const info = await client.info('cluster');
    if (!/^cluster_enabled:1\b/m.test(info)) return client;
    client.disconnect();
    return await connectCluster(client.options, redisOptions, timeoutMs);
  } catch (err) {
    client.disconnect();
    throw new RedisUnreachableError(redactRedisUrl(url), (err as Error).message);
  }
}

/** `p`, or an error "<what> within <ms> ms" once `ms` have passed. */
async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} within ${ms} ms`)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A Cluster client started from the node the URL names (its host, port,
 * credentials and TLS apply to every node). Commands wait while a master
 * fails over: a moved slot or a down cluster is retried, and the slot map
 * re-read, rather than failed.
 */
async function connectCluster(node: RedisOptions, redisOptions: RedisOptions, timeoutMs: number): Promise<Cluster> {
  const { host = '127.0.0.1', port = 6379, username, password, tls } = node;
  const cluster = new Cluster([{ host, port }], {
    redisOptions: { ...redisOptions, lazyConnect: false, ...(username ? { username } : {}), ...(password ? { password } : {}), ...(tls ? { tls } : {}) },
    enableOfflineQueue: true,
    clusterRetryStrategy: (times) => Math.min(500, 50 * 2 ** Math.min(times, 4)),
    retryDelayOnFailover: 200,
    retryDelayOnClusterDown: 300,
    retryDelayOnTryAgain: 200,
    // A failover takes the cluster's node timeout and more: ride it out.
    maxRedirections: 64,
    slotsRefreshTimeout: 2000,
    lazyConnect: true,
  });
  cluster.on('error', () => undefined);
  try {
    await within(cluster.connect(), timeoutMs, 'no Cluster answer');
    await cluster.ping();
  } catch (err) {
    cluster.disconnect();
    throw err;
  }
  return cluster;
}

/** "a Redis Cluster of 3 masters" or "a single Redis", for the log line that says where an arena lives. */
export function describeRedis(client: RedisClient): { masters: number; said: string } {
  if (!(client instanceof Cluster)) return { masters: 1, said: 'a single Redis' };
  const masters = client.nodes('master').length;
  return { masters, said: `a Redis Cluster of ${masters} master${masters === 1 ? '' : 's'}` };
}

export { Cluster, Redis };
