/**
 * The adaptive-pace benchmark of bench:crawl (BENCH_PART=adaptive): one site
 * that answers every request in BENCH_ADAPTIVE_LATENCY_MS (default 200 ms),
 * crawled for a fixed window by
 *   - weir with adaptivePace (delayFactor 1: an interval of one response
 *     time, AutoThrottle's target concurrency of 1) and no rate limit, as 1
 *     and as 4 `weir worker` processes, and
 *   - the same number of independent AutoThrottle-style clients (Scrapy's
 *     rule, written out below: each keeps its own delay from the latencies
 *     it sees, and starts a request every delay), as a crawl of N Scrapy
 *     processes would;
 * reporting the requests per second the site logged in the window's steady
 * part. weir's workers share one pace in Redis; independent adapters each
 * send at the target, so N of them send N times as much.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { Agent, request } from 'undici';
import { kickoff } from '../src/crawl/kickoff.js';
import { storableSeed, validateSeed } from '../src/crawl/seed/seed.js';
import { cliBundle } from '../test/helpers/cli-bundle.js';
import { startRedis, type RedisServer } from '../test/helpers/redis.js';

type Out = (name: string, value: string, note?: string) => void;

const LATENCY_MS = Number(process.env.BENCH_ADAPTIVE_LATENCY_MS ?? 200);
/** Each run lasts this long; the first WARMUP_S are left out (start-up, the pace's first reports). */
const WINDOW_S = Number(process.env.BENCH_ADAPTIVE_SECONDS ?? 15);
const WARMUP_S = 4;
const PAGES = 5000;

/** The site: an index of PAGES links, every answer after LATENCY_MS; arrivals logged (ms, this process's clock). */
async function slowSite(): Promise<{ origin: string; arrivals: number[]; close: () => Promise<void> }> {
  const arrivals: number[] = [];
  const index = `<!doctype html><html><body>${Array.from({ length: PAGES }, (_, i) => `<a href="/p${i}">${i}</a>`).join(' ')}</body></html>`;
  const server: Server = createServer((req, res) => {
    if (req.url !== '/robots.txt') arrivals.push(performance.now());
    setTimeout(() => {
      if (req.url === '/robots.txt') res.writeHead(404).end();
      else res.writeHead(200, { 'content-type': 'text/html' }).end(req.url === '/' ? index : '<html><body>leaf</body></html>');
    }, LATENCY_MS);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    arrivals,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

/** Requests per second the site logged between WARMUP_S and WINDOW_S after `t0`. */
function steadyRate(arrivals: number[], t0: number): number {
  const from = t0 + WARMUP_S * 1000;
  const to = t0 + WINDOW_S * 1000;
  return arrivals.filter((t) => t >= from && t < to).length / (WINDOW_S - WARMUP_S);
}

const exited = (p: ChildProcess): Promise<unknown> => new Promise((r) => (p.exitCode !== null || p.signalCode !== null ? r(null) : p.on('exit', r)));

/**
 * Scrapy's AutoThrottle, as its documentation and code state it, for one
 * client: a request starts every `delay`; each response's latency sets the
 * target delay latency / targetConcurrency, and the new delay is the mean
 * of the old and the target, no less than the target, within [min, max];
 * a non-200 answer may not lower it.
 */
async function autoThrottleClient(origin: string, until: number, stop: AbortSignal): Promise<void> {
  const agent = new Agent({ connections: 64 });
  const targetConcurrency = 1;
  const [minDelay, maxDelay] = [0, 60_000];
  let delay = 0;
  let next = 0;
  let page = 0;
  const inFlight: Promise<void>[] = [];
  while (performance.now() < until && !stop.aborted) {
    const wait = next - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const sent = performance.now();
    next = sent + delay;
    inFlight.push(
      request(`${origin}/p${page++ % PAGES}`, { dispatcher: agent, signal: stop })
        .then(async (res) => {
          await res.body.dump();
          const latency = performance.now() - sent;
          const target = latency / targetConcurrency;
          let d = Math.max(target, (delay + target) / 2);
          d = Math.min(Math.max(d, minDelay), maxDelay);
          if (res.statusCode !== 200 && d <= delay) return;
          delay = d;
        })
        .catch(() => undefined),
    );
    // The first request's answer sets the first delay (Scrapy starts at AUTOTHROTTLE_START_DELAY; here, at the site's own latency).
    if (page === 1) await inFlight[0];
  }
  await Promise.allSettled(inFlight);
  await agent.close();
}

export async function adaptiveBenchmarks(out: Out, dir: string): Promise<void> {
  const redis = await startRedis();
  const rates = new Map<string, number>();
  try {
    for (const n of [1, 4]) {
      const site = await slowSite();
      const t0 = performance.now();
      const stop = new AbortController();
      await Promise.all(Array.from({ length: n }, () => autoThrottleClient(site.origin, t0 + WINDOW_S * 1000, stop.signal)));
      rates.set(`auto${n}`, steadyRate(site.arrivals, t0));
      out(`adaptive, ${LATENCY_MS} ms answers: ${n} AutoThrottle-style client${n > 1 ? 's' : ''}`, `${(rates.get(`auto${n}`) ?? 0).toFixed(2)}/s`, 'each adapts alone (Scrapy\'s rule, target concurrency 1)');
      await site.close();

      const web = await slowSite();
      const rate = await weirWorkers(redis, dir, web, n);
      rates.set(`weir${n}`, rate);
      out(`adaptive, ${LATENCY_MS} ms answers: weir, ${n} worker process${n > 1 ? 'es' : ''}`, `${rate.toFixed(2)}/s`, 'one pace in Redis (adaptivePace, delayFactor 1)');
      await web.close();
    }
    const ratio = (k: string): string => ((rates.get(`${k}4`) ?? 0) / (rates.get(`${k}1`) ?? 1)).toFixed(2);
    out('adaptive: the site\'s rate with 4 against 1', `weir ${ratio('weir')}×`, `AutoThrottle-style ${ratio('auto')}× (target: weir 1.0×)`);
  } finally {
    await redis.destroy();
  }
}

/** `workers` weir worker processes crawl `web` for WINDOW_S (a fresh arena), then are stopped; the site's steady rate. */
async function weirWorkers(redis: RedisServer, dir: string, web: Awaited<ReturnType<typeof slowSite>>, workers: number): Promise<number> {
  const client = new Redis({ port: redis.port, host: '127.0.0.1' });
  const seed = validateSeed({
    arena: `adaptive-${workers}`,
    rateLimits: { [new URL(web.origin).host]: 'unlimited' },
    maxInFlightPerDomain: 8,
    start: [`${web.origin}/`],
    adaptivePace: { delayFactor: 1, maxDelayMs: 30_000 },
    allowPrivateNetworks: true,
  });
  const seedPath = join(dir, `${seed.arena}.json`);
  await writeFile(seedPath, JSON.stringify(storableSeed(seed)));
  await kickoff(client, seed);
  client.disconnect();
  const t0 = performance.now();
  const procs = Array.from({ length: workers }, () =>
    spawn(process.execPath, [cliBundle(), 'worker', seedPath, '--redis', redis.url, '--concurrency', '8'], { stdio: 'ignore', env: { ...process.env, WEIR_LOG_LEVEL: 'warn' } }),
  );
  await new Promise((r) => setTimeout(r, WINDOW_S * 1000));
  for (const p of procs) p.kill('SIGTERM');
  await Promise.all(procs.map(exited));
  return steadyRate(web.arrivals, t0);
}
