import { spawn, type ChildProcess, execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Cluster, Redis } from 'ioredis';

const run = promisify(execFile);

/** A free TCP port on 127.0.0.1 (asked of the kernel, then released). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * A free port for a cluster node: its cluster bus listens 10,000 above it,
 * so the port must be at most 55,535 (redis-server refuses to start
 * otherwise; Linux hands out ports up to 60,999) and that one free too.
 */
export async function freeClusterPort(): Promise<number> {
  for (let tries = 0; tries < 100; tries++) {
    const port = await freePort();
    if (port <= 55_535 && (await portIsFree(port + 10_000))) return port;
  }
  throw new Error('no free port pair (p, p + 10000) for a cluster node in 100 tries');
}

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

export interface RedisServer {
  port: number;
  url: string;
  dir: string;
  process: ChildProcess;
  client(): Redis;
  /** Stops the server (SIGTERM by default) and waits for it to exit. */
  stop(signal?: NodeJS.Signals): Promise<void>;
  /** Starts it again on the same port and data. */
  restart(): Promise<void>;
  /** Stops it and removes its data directory. */
  destroy(): Promise<void>;
}

async function waitForPing(port: number, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const { stdout } = await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), 'ping']);
      // NOAUTH: up, but asking for a password (ACL tests).
      if (stdout.trim() === 'PONG' || /NOAUTH/.test(stdout)) return;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) throw new Error(`redis-server on port ${port} did not answer PING within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export interface RedisServerOptions {
  args?: string[];
  appendonly?: boolean;
  /** A port to use instead of a free one. */
  port?: number;
}

/** Starts a private redis-server on a free loopback port with its own data dir. */
export async function startRedis(options: RedisServerOptions = {}): Promise<RedisServer> {
  const dir = await mkdtemp(join(tmpdir(), 'weir-redis-'));
  const port = options.port ?? (await freePort());
  const args = [
    '--port', String(port),
    '--bind', '127.0.0.1',
    '--dir', dir,
    '--save', '',
    '--appendonly', options.appendonly ? 'yes' : 'no',
    '--appendfsync', 'everysec',
    '--maxmemory-policy', 'noeviction',
    ...(options.args ?? []),
  ];
  let proc!: ChildProcess;
  const clients: Redis[] = [];
  const start = async (): Promise<void> => {
    proc = spawn('redis-server', args, { stdio: 'ignore' });
    await waitForPing(port);
  };
  const stop = async (signal: NodeJS.Signals = 'SIGTERM'): Promise<void> => {
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise((r) => proc.once('exit', r));
    proc.kill(signal);
    await exited;
  };
  await start();
  const server: RedisServer = {
    port,
    url: `redis://127.0.0.1:${port}`,
    dir,
    get process() {
      return proc;
    },
    client() {
      const c = new Redis({ port, host: '127.0.0.1', lazyConnect: false, maxRetriesPerRequest: null });
      clients.push(c);
      return c;
    },
    stop,
    restart: start,
    async destroy() {
      for (const c of clients) c.disconnect();
      await stop('SIGKILL');
      await rm(dir, { recursive: true, force: true });
    },
  };
  return server;
}

export interface RedisClusterHandle {
  ports: number[];
  /** Every node's server (masters and replicas). */
  nodes: RedisServer[];
  client(): Cluster;
  /** The ports of the nodes that are masters now (after a failover, the promoted replicas). */
  masterPorts(): Promise<number[]>;
  destroy(): Promise<void>;
}

export interface ClusterOptions {
  /** Replicas per master (0 by default). */
  replicas?: number;
  /** cluster-node-timeout: how long a master may be silent before its replica takes over. */
  nodeTimeoutMs?: number;
  /** cluster-require-full-coverage (Redis's default, true: the whole cluster refuses commands while any slot has no master). */
  requireFullCoverage?: boolean;
}

/**
 * A local 3-master Redis Cluster: `redis-server --cluster-enabled yes` per
 * node (3 × (1 + replicas)), joined by `redis-cli --cluster create`, ready
 * when every node reports cluster_state:ok. Any failure to start throws:
 * cluster tests fail, never skip.
 */
export async function startCluster(options: ClusterOptions = {}): Promise<RedisClusterHandle> {
  const replicas = options.replicas ?? 0;
  const nodes: RedisServer[] = [];
  for (let i = 0; i < 3 * (1 + replicas); i++) {
    // (A replica's first sync would wait 5 s by default, repl-diskless-sync-delay: a
    // replica that never synced refuses to take over.)
    const args = ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', String(options.nodeTimeoutMs ?? 5000), '--repl-diskless-sync-delay', '0', '--cluster-require-full-coverage', options.requireFullCoverage === false ? 'no' : 'yes'];
    nodes.push(await startRedis({ args, port: await freeClusterPort() }));
  }
  const ports = nodes.map((n) => n.port);
  await run('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', String(replicas), '--cluster-yes']);
  const deadline = Date.now() + 30_000;
  for (const p of ports) {
    for (;;) {
      const { stdout } = await run('redis-cli', ['-p', String(p), 'cluster', 'info']);
      if (stdout.includes('cluster_state:ok')) break;
      if (Date.now() > deadline) throw new Error(`cluster node ${p} never reached cluster_state:ok`);
      await new Promise((r) => setTimeout(r, 100));
    }
    // Replicas: ready once they have their master's data.
    for (;;) {
      const { stdout } = await run('redis-cli', ['-p', String(p), 'info', 'replication']);
      if (!stdout.includes('role:slave') || stdout.includes('master_link_status:up')) break;
      if (Date.now() > deadline) throw new Error(`cluster replica ${p} never synced with its master`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  const clients: Cluster[] = [];
  return {
    ports,
    nodes,
    client() {
      const c = new Cluster(ports.map((port) => ({ host: '127.0.0.1', port })), { redisOptions: { maxRetriesPerRequest: null } });
      clients.push(c);
      return c;
    },
    async masterPorts() {
      const masters: number[] = [];
      for (const n of nodes) {
        if (n.process.exitCode !== null || n.process.signalCode !== null) continue;
        const { stdout } = await run('redis-cli', ['-p', String(n.port), 'role']);
        if (stdout.startsWith('master')) masters.push(n.port);
      }
      return masters;
    },
    async destroy() {
      for (const c of clients) c.disconnect();
      await Promise.all(nodes.map((n) => n.destroy()));
    },
  };
}

/** Script calls a server has run so far: FCALL (Redis ≥ 7) or EVALSHA and EVAL (older), from INFO commandstats. */
export async function scriptCalls(redis: { info(section: string): Promise<string> }): Promise<number> {
  const stats = await redis.info('commandstats');
  let n = 0;
  for (const m of stats.matchAll(/cmdstat_(?:fcall|evalsha|eval):calls=(\d+)/g)) n += Number(m[1]);
  return n;
}
