/**
 * A strict rate-limiting server in front of test sites: a real nginx (Debian's
 * package) with `limit_req` at each site's rate and no burst, so it refuses
 * (429) any request that arrives sooner than 1/R after the last one it let
 * through, by its own millisecond clock. Each site gets a port of its own on
 * 127.0.0.1 that proxies to the site; the site's origin, as the crawler sees
 * it, is the proxy's. The judge is nginx's log, never weir's counters.
 *
 * nginx runs from a temp dir (`-p` prefix, its own config), one process,
 * in the foreground as a child of the test: nothing outside the dir is
 * touched, and stop() leaves nothing running.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { setPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './redis.js';

/** Where Debian's nginx package puts the binary. */
const NGINX = ['/usr/sbin/nginx', '/usr/bin/nginx'].find((p) => existsSync(p));

/** util-linux's chrt, to give the judge real-time priority. */
const CHRT = ['/usr/bin/chrt', '/bin/chrt'].find((p) => existsSync(p));

export interface StrictSite {
  /** The site's own origin (what nginx proxies to). */
  upstream: string;
  /** Requests per second nginx lets through (a whole number per minute: nginx's own granularity). */
  rate: number;
}

/** One line of nginx's log: a request as nginx saw it. */
export interface StrictArrival {
  /** Index of the site in the list given to start(). */
  site: number;
  path: string;
  /** When the request's first bytes were read, ms since the epoch (nginx's clock, ms resolution). */
  at: number;
  status: number;
  /** True when limit_req refused it (nginx answered itself). */
  refused: boolean;
}

export interface StrictServer {
  /** The proxied origins, in the order of the sites given. */
  origins: string[];
  /** Domain keys of those origins: "127.0.0.1:<port>". */
  keys: string[];
  /** Stops nginx (its buffered log written out) and reads its log; nothing is left running. */
  finish(): Promise<StrictArrival[]>;
  /** Stops nginx and removes its dir (after finish(), or in a `finally`). */
  stop(): Promise<void>;
}

/** nginx's limit_req rate, in requests a minute when a per-second rate is not whole. */
const nginxRate = (rate: number): string => {
  if (Number.isInteger(rate)) return `${rate}r/s`;
  const perMinute = rate * 60;
  if (!Number.isInteger(perMinute)) throw new Error(`nginx can not express ${rate}/s exactly (r/s or r/m)`);
  return `${perMinute}r/m`;
};

function config(dir: string, sites: StrictSite[], ports: number[]): string {
  const zones = [...new Set(sites.map((s) => s.rate))].map((rate, i) => ({ rate, name: `r${i}` }));
  const zoneOf = (rate: number): string => zones.find((z) => z.rate === rate)?.name as string;
  const servers = sites.map(
    (s, i) => `  server {
    listen 127.0.0.1:${ports[i]};
    set $site ${i};
    limit_req zone=${zoneOf(s.rate)};
    location / {
      proxy_pass ${s.upstream};
      proxy_set_header Host $http_host;
      proxy_buffering off;
    }
  }`,
  );
  return `daemon off;
master_process off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  client_body_temp_path ${dir}/client;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  keepalive_timeout 30s;
  keepalive_requests 100000;
  # Arrival: the log is written at the request's end; $request_time is how
  # long since its first bytes were read. limit_req_status: PASSED or REJECTED.
  log_format arrivals '$msec $request_time $site $status $limit_req_status $request_uri';
  # (Buffered: a write to the log must not hold up the event loop that stamps.)
  access_log ${dir}/access.log arrivals buffer=256k flush=1s;
${zones.map((z) => `  limit_req_zone $server_port zone=${z.name}:10m rate=${nginxRate(z.rate)};`).join('\n')}
  limit_req_status 429;
  limit_req_log_level warn;
${servers.join('\n')}
}
`;
}

const listening = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });

export async function startStrictServer(sites: StrictSite[]): Promise<StrictServer> {
  if (!NGINX) throw new Error('nginx is not installed (Debian: apt-get install nginx; .ci/run installs it)');
  // In memory where there is /dev/shm: a log write that waits on a disk would
  // hold up the event loop that stamps arrivals.
  const dir = await mkdtemp(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'weir-nginx-'));
  const ports: number[] = [];
  for (const _ of sites) {
    let port = await freePort();
    while (ports.includes(port)) port = await freePort();
    ports.push(port);
  }
  await writeFile(join(dir, 'nginx.conf'), config(dir, sites, ports));
  // The judge must stamp arrivals when they come: nginx stamps a request at
  // the event loop turn that reads it, so a judge kept off the CPU by the
  // crawl it judges stamps late and sees the gap after that request short.
  // Run it with real-time priority (SCHED_FIFO, as root) where allowed.
  const chrt = process.env.STRICT_REALTIME !== '0' && process.getuid?.() === 0 ? CHRT : undefined;
  const realtime = chrt !== undefined;
  const nginxArgs = ['-p', dir, '-c', join(dir, 'nginx.conf')];
  const child: ChildProcess = chrt ? spawn(chrt, ['-f', '10', NGINX, ...nginxArgs], { stdio: ['ignore', 'ignore', 'pipe'] }) : spawn(NGINX, nginxArgs, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  if (!realtime && child.pid !== undefined) {
    try {
      setPriority(child.pid, -10);
    } catch {
      // not permitted: its stamps may then lag on a loaded machine (a refusal names the pair)
    }
  }
  const deadline = Date.now() + 10_000;
  for (const port of ports) {
    while (!(await listening(port))) {
      if (child.exitCode !== null || Date.now() > deadline) {
        child.kill('SIGKILL');
        const log = await readFile(join(dir, 'error.log'), 'utf8').catch(() => '');
        throw new Error(`nginx did not start: ${stderr}${log}`);
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  // Graceful: nginx writes its buffered log as it goes.
  const quit = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGQUIT');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  };
  const origins = ports.map((p) => `http://127.0.0.1:${p}`);
  return {
    origins,
    keys: ports.map((p) => `127.0.0.1:${p}`),
    finish: async () => {
      await quit();
      const text = await readFile(join(dir, 'access.log'), 'utf8').catch(() => '');
      return text
        .split('\n')
        .filter((l) => l.length > 0)
        .map((line) => {
          const [msec, took, site, status, limit, ...uri] = line.split(' ');
          return {
            site: Number(site),
            path: uri.join(' '),
            at: Math.round((Number(msec) - Number(took)) * 1000),
            status: Number(status),
            refused: limit === 'REJECTED',
          };
        });
    },
    stop: async () => {
      await quit();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Refused requests per site, and the smallest gap each site saw by nginx's stamps (ms; Infinity with fewer than two). */
export function strictVerdict(arrivals: StrictArrival[], sites: number): { refused: number[]; smallestGap: number[] } {
  const refused = new Array<number>(sites).fill(0);
  const times: number[][] = Array.from({ length: sites }, () => []);
  for (const a of arrivals) {
    if (a.refused) refused[a.site] = (refused[a.site] ?? 0) + 1;
    times[a.site]?.push(a.at);
  }
  const smallestGap = times.map((t) => {
    t.sort((x, y) => x - y);
    let least = Infinity;
    for (let i = 1; i < t.length; i++) least = Math.min(least, (t[i] as number) - (t[i - 1] as number));
    return least;
  });
  return { refused, smallestGap };
}
