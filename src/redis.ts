import { AbstractConnector, Cluster, Redis, type RedisOptions } from 'ioredis';
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
  options: ConnectOptions & {
    waitMs?: number;
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

interface ConnectOptions {
  connectTimeoutMs?: number;
  onReconnect?: (attempt: number, delayMs: number) => void;
  /** Cluster nodes a connection may go to (clusterNodeAllowList); default: WEIR_CLUSTER_NODES, else any. */
  clusterNodes?: string[] | null;
  /** Told of a risk worth a log line (a Cluster's password sent without TLS); default: process.emitWarning. */
  onWarning?: (message: string) => void;
}

async function connectOnce(url: string, options: ConnectOptions): Promise<RedisClient> {
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
    const allowed = options.clusterNodes !== undefined ? options.clusterNodes : clusterNodesFromEnv();
    const warn = options.onWarning ?? ((m: string) => process.emitWarning(m, 'WeirWarning'));
    if (client.options.password && !client.options.tls) warn(`Redis Cluster at ${redactRedisUrl(url)}: a password is set but TLS is not (rediss://): it crosses the network in clear to every node the cluster announces${allowed ? '' : '; set WEIR_CLUSTER_NODES (or --cluster-nodes) to the nodes that may get it'}`);
    return await connectCluster(client.options, redisOptions, timeoutMs, allowed);
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
async function connectCluster(node: RedisOptions, redisOptions: RedisOptions, timeoutMs: number, allowed: string[] | null): Promise<Cluster> {
  const { host = '127.0.0.1', port = 6379, username, password, tls } = node;
  const allow = allowed ? clusterNodeAllowList([...allowed, `${host}:${port}`]) : null;
  const cluster = new Cluster([{ host, port }], {
    // Every address the cluster announces (CLUSTER SLOTS, a MOVED or ASK) passes through here.
    ...(allow ? { natMap: (key: string) => (allow(key) ? null : refusedNode(key)) } : {}),
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

/** WEIR_CLUSTER_NODES as a list (comma- or space-separated host:port), or null when unset. */
export function clusterNodesFromEnv(env: NodeJS.ProcessEnv = process.env): string[] | null {
  const v = env.WEIR_CLUSTER_NODES?.trim();
  return v ? v.split(/[\s,]+/).filter((s) => s !== '') : null;
}

/**
 * Whether a node ("host:port", as the cluster announces it) is one of
 * `nodes` ("host:port", or "host" for any port; hosts as written, [::1] or
 * ::1 for IPv6). The node the URL names is always allowed.
 */
export function clusterNodeAllowList(nodes: string[]): (key: string) => boolean {
  const norm = (h: string): string => h.toLowerCase().replace(/^\[|\]$/g, '');
  // An entry: "[v6]:port", "[v6]", a bare "v6" (any port: a port would be ambiguous), "host:port" or "host".
  const entry = (s: string): { host: string; port: string | null } => {
    const m = /^\[([^\]]+)\](?::(\d+))?$/.exec(s) ?? (s.split(':').length > 2 ? null : /^([^:]+)(?::(\d+))?$/.exec(s));
    return m ? { host: norm(m[1] ?? ''), port: m[2] ?? null } : { host: norm(s), port: null };
  };
  const allowed = nodes.map(entry);
  return (key) => {
    // A key as ioredis makes it: "<host>:<port>", the port always last.
    const i = key.lastIndexOf(':');
    const host = norm(key.slice(0, i));
    const port = key.slice(i + 1);
    return allowed.some((a) => a.host === host && (a.port === null || a.port === port));
  };
}

/** A node outside the allow-list: its "connection" fails at once, before any byte (or credential) is sent. */
function refusedNode(key: string): { host: string; port: number; Connector: new () => AbstractConnector } {
  class Refused extends AbstractConnector {
    constructor() {
      super(0);
    }
    connect(): Promise<never> {
      return Promise.reject(new WeirError('WEIR_CLUSTER_NODE', `Redis Cluster node ${key} is not in WEIR_CLUSTER_NODES: not connecting (no credentials sent)`));
    }
  }
  const i = key.lastIndexOf(':');
  return { host: key.slice(0, i), port: Number(key.slice(i + 1)), Connector: Refused };
}

/** "a Redis Cluster of 3 masters" or "a single Redis", for the log line that says where an arena lives. */
export function describeRedis(client: RedisClient): { masters: number; said: string } {
  if (!(client instanceof Cluster)) return { masters: 1, said: 'a single Redis' };
  const masters = client.nodes('master').length;
  return { masters, said: `a Redis Cluster of ${masters} master${masters === 1 ? '' : 's'}` };
}

export { Cluster, Redis };
