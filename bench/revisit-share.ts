/**
 * The revisit benchmark of bench:crawl (BENCH_PART=revisit): one site of 40
 * pages — 4 that change every 2 s, 4 every 8 s, 4 every 30 s, 28 that never
 * change (all with ETags, so an unchanged page is answered 304) — crawled
 * for BENCH_REVISIT_SECONDS (default 40) by 2 in-process workers at 20/s,
 * once with weir's adaptive intervals (1 to 16 s) and once with a fixed
 * interval (every page every 4 s: revisit's bounds set equal). Side by
 * side: requests the site answered, the share spent on the pages that
 * change, changes that happened after the first 10 s and how many were
 * seen, and how late on average (change to first request that saw it).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { runCrawl } from '../src/crawl/run.js';
import { validateSeed } from '../src/crawl/seed/seed.js';
import { startRedis } from '../test/helpers/redis.js';

type Out = (name: string, value: string, note?: string) => void;

const SECONDS = Number(process.env.BENCH_REVISIT_SECONDS ?? 40);
const SETTLE_MS = 10_000;
/** Change period per page (ms), null for never. */
const PERIODS: (number | null)[] = [...Array<number>(4).fill(2000), ...Array<number>(4).fill(8000), ...Array<number>(4).fill(30_000), ...Array<null>(28).fill(null)];

interface Hit {
  page: number;
  t: number;
  status: number;
}

async function site(): Promise<{ origin: string; hits: Hit[]; t0: () => number; close: () => Promise<void> }> {
  const hits: Hit[] = [];
  let start = 0;
  const server: Server = createServer((req, res) => {
    const t = performance.now() - start;
    const path = req.url ?? '/';
    if (path === '/robots.txt') return void res.writeHead(404).end();
    if (path === '/') return void res.writeHead(200, { 'content-type': 'text/html', etag: '"index"' }).end(PERIODS.map((_, i) => `<a href="/p${i}">${i}</a>`).join(' '));
    const page = Number(path.slice(2));
    const period = PERIODS[page] ?? null;
    const etag = `"p${page}-${period === null ? 0 : Math.floor(t / period)}"`;
    const status = req.headers['if-none-match'] === etag ? 304 : 200;
    hits.push({ page, t, status });
    res.writeHead(status, { 'content-type': 'text/html', etag }).end(status === 304 ? undefined : `<html><body>${etag}</body></html>`);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  start = performance.now();
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    hits,
    t0: () => start,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

async function crawl(redis: Redis, label: string, revisit: { minIntervalSeconds: number; initialIntervalSeconds: number; maxIntervalSeconds: number }, out: Out): Promise<void> {
  const s = await site();
  try {
    const key = new URL(s.origin).host;
    const seed = validateSeed({ arena: `revisit-${label.replace(/[^a-z0-9]+/g, '-')}`, rateLimits: { [key]: 20 }, maxInFlightPerDomain: 2, start: [`${s.origin}/`], allowPrivateNetworks: true, revisit });
    await runCrawl(redis, seed, { workers: 2, concurrency: 2, signal: AbortSignal.timeout(SECONDS * 1000) });
    const end = SECONDS * 1000 - 500;
    const changing = s.hits.filter((h) => PERIODS[h.page] !== null);
    let changes = 0;
    let seen = 0;
    let lateness = 0;
    PERIODS.forEach((period, page) => {
      if (period === null) return;
      const visits = s.hits.filter((h) => h.page === page).map((h) => h.t);
      for (let b = Math.ceil(SETTLE_MS / period) * period; b < end; b += period) {
        // (A change is seen by the first visit after it, if that comes before the next change.)
        changes++;
        const first = visits.find((t) => t >= b && t < b + period);
        if (first !== undefined) {
          seen++;
          lateness += first - b;
        }
      }
    });
    const notModified = s.hits.filter((h) => h.status === 304).length;
    out(
      `revisits, ${label}: requests / on the changing pages`,
      `${s.hits.length} / ${((changing.length / Math.max(1, s.hits.length)) * 100).toFixed(0)} %`,
      `${notModified} answered 304; changes after ${SETTLE_MS / 1000} s seen ${seen} of ${changes}, ${(lateness / Math.max(1, seen) / 1000).toFixed(2)} s late on average`,
    );
  } finally {
    await s.close();
  }
}

export async function revisitShareBenchmarks(out: Out): Promise<void> {
  const server = await startRedis();
  const redis = new Redis({ port: server.port, host: '127.0.0.1' });
  try {
    await crawl(redis, 'adaptive 1–16 s', { minIntervalSeconds: 1, initialIntervalSeconds: 4, maxIntervalSeconds: 16 }, out);
    await crawl(redis, 'fixed 4 s', { minIntervalSeconds: 4, initialIntervalSeconds: 4, maxIntervalSeconds: 4 }, out);
  } finally {
    redis.disconnect();
    await server.destroy();
  }
}
