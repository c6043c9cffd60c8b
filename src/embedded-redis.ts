import { execFileSync, spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, Socket } from 'node:net';
import { join, resolve } from 'node:path';
import { WeirError } from './errors.js';
import { RedisUnreachableError } from './redis.js';

/** Where weir looks for a Redis when none is named. */
export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

export interface RedisChoice {
  url: string;
  /** How it was chosen, for the log line. */
  source: 'flag' | 'env' | 'default' | 'embedded-running' | 'embedded-started';
}

/** Answers PING? (a raw RESP exchange: no client library, no retries) */
export function pings(url: string, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolveP) => {
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      resolveP(false);
      return;
    }
    if (u.protocol !== 'redis:') {
      // TLS or other schemes: let the real client decide.
      resolveP(true);
      return;
    }
    const sock = new Socket();
    const done = (ok: boolean): void => {
      sock.destroy();
      resolveP(ok);
    };
    sock.setTimeout(timeoutMs, () => done(false));
    sock.once('error', () => done(false));
    sock.connect(Number(u.port || 6379), u.hostname.replace(/^\[|\]$/g, ''), () => sock.write('PING\r\n'));
    sock.once('data', (d) => done(/^(\+PONG|-NOAUTH|-ERR)/.test(d.toString())));
  });
}

function freePort(): Promise<number> {
  return new Promise((resolveP, reject) => {
    const srv = createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const a = srv.address();
      const port = typeof a === 'object' && a ? a.port : 0;
      srv.close(() => resolveP(port));
    });
  });
}

function redisServerOnPath(): string | null {
  try {
    return execFileSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' }).trim() || null;
  } catch {
    return null;
  }
}

const pidAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

export const NO_REDIS_HELP =
  'no Redis answered and no redis-server is on PATH: install one (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis), or start one with `docker compose up -d redis`, or pass --redis URL';

/**
 * A private redis-server for this working directory, under .weir/redis/:
 * AOF on (appendfsync everysec), noeviction, loopback only, a free port.
 * A lock file makes two weir processes that start at once share one server
 * instead of starting two on one data directory; the port and pid files let
 * later runs find it (and resume from its data).
 */
export class EmbeddedRedis {
  readonly dir: string;

  constructor(baseDir = process.cwd()) {
    this.dir = resolve(join(baseDir, '.weir', 'redis'));
  }

  private read(name: string): string | null {
    try {
      return readFileSync(join(this.dir, name), 'utf8').trim();
    } catch {
      return null;
    }
  }

  /** The URL of this directory's server when it is running. */
  async running(): Promise<string | null> {
    const port = this.read('port');
    if (!port) return null;
    const url = `redis://127.0.0.1:${port}`;
    return (await pings(url)) ? url : null;
  }

  /** Finds the running server or starts one; resolves its URL. */
  async ensure(): Promise<{ url: string; started: boolean }> {
    const existing = await this.running();
    if (existing) return { url: existing, started: false };
    const bin = redisServerOnPath();
    if (!bin) throw new RedisUnreachableError('the default address', NO_REDIS_HELP);
    mkdirSync(this.dir, { recursive: true });
    const lockPath = join(this.dir, 'lock');
    const deadline = Date.now() + 15_000;
    for (;;) {
      let fd: number | null = null;
      try {
        fd = openSync(lockPath, 'wx');
      } catch {
        // Someone else holds the lock: wait for their server, or take over a stale lock.
        const holder = Number(this.read('lock'));
        if (Number.isInteger(holder) && holder > 0 && !pidAlive(holder)) rmSync(lockPath, { force: true });
        const url = await this.running();
        if (url) return { url, started: false };
        if (Date.now() > deadline) throw new WeirError('WEIR_EMBEDDED_REDIS', `timed out waiting for the embedded Redis in ${this.dir} (remove ${lockPath} if no weir is running)`);
        await new Promise((r) => setTimeout(r, 100));
        continue;
      }
      try {
        writeFileSync(fd, String(process.pid));
        closeSync(fd);
        fd = null;
        const again = await this.running();
        if (again) return { url: again, started: false };
        const port = await freePort();
        const child = spawn(
          bin,
          ['--port', String(port), '--bind', '127.0.0.1', '--dir', this.dir, '--appendonly', 'yes', '--appendfsync', 'everysec', '--save', '', '--maxmemory-policy', 'noeviction', '--protected-mode', 'yes', '--logfile', join(this.dir, 'redis.log')],
          { detached: true, stdio: 'ignore' },
        );
        child.unref();
        const url = `redis://127.0.0.1:${port}`;
        const up = Date.now() + 10_000;
        while (!(await pings(url))) {
          if (Date.now() > up || child.exitCode !== null) throw new WeirError('WEIR_EMBEDDED_REDIS', `redis-server did not start (see ${join(this.dir, 'redis.log')})`);
          await new Promise((r) => setTimeout(r, 50));
        }
        writeFileSync(join(this.dir, 'port'), String(port));
        writeFileSync(join(this.dir, 'pid'), String(child.pid));
        return { url, started: true };
      } finally {
        if (fd !== null) closeSync(fd);
        rmSync(lockPath, { force: true });
      }
    }
  }

  /** Stops this directory's server (its data stays). */
  async stop(): Promise<boolean> {
    const pid = Number(this.read('pid'));
    if (!Number.isInteger(pid) || pid <= 0 || !pidAlive(pid)) return false;
    process.kill(pid, 'SIGTERM');
    const until = Date.now() + 10_000;
    while (pidAlive(pid) && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    rmSync(join(this.dir, 'port'), { force: true });
    return true;
  }
}

/**
 * Which Redis to use: --redis, else REDIS_URL, else the default address
 * (127.0.0.1:6379, or WEIR_DEFAULT_REDIS) when a Redis answers there, else
 * a private redis-server under ./.weir/redis/.
 */
export async function chooseRedis(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): Promise<RedisChoice> {
  if (flag) return { url: flag, source: 'flag' };
  if (env.REDIS_URL) return { url: env.REDIS_URL, source: 'env' };
  const fallback = env.WEIR_DEFAULT_REDIS ?? DEFAULT_REDIS_URL;
  if (await pings(fallback)) return { url: fallback, source: 'default' };
  const embedded = await new EmbeddedRedis().ensure();
  return { url: embedded.url, source: embedded.started ? 'embedded-started' : 'embedded-running' };
}
