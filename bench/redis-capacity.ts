/**
 * How many pages a second one Redis core carries (BENCH_PART=capacity of
 * npm run bench:crawl): a crawl's Redis traffic with nothing else in the
 * way, as fast as the clients can send it. No HTTP and no parsing: each
 * "page" is a lease taken and committed (commitAndTake, as a worker's lane
 * does), and its links, made up as the 100-domain bench web's pages have
 * them (a navigation bar of 8, 2 child pages, the front pages of 3 other
 * sites), go through what the crawler's link path does with them: the
 * worker's local filter (LocalSeen), the shared filter's bit positions
 * (bloomPositions), one enqueue per target domain in one turn.
 *   - weir: 2 workers (FairQueue clients with the crawler's options: linger
 *     5 ms, 4 spare leases) × 64 lanes, `unlimited`, 4 in flight per domain;
 *   - the seed design's scripts, the same pages, 128 loops: dequeue, enqueue
 *     each link no page offered before (a Set in the client: its dedupe costs
 *     Redis nothing), commit.
 * Redis's CPU per page here is its cost when calls keep coming (a busy
 * arena); when it is idle between calls (a modest crawl: BENCH_PART=redis)
 * each call also pays its wake-up and cold caches. On 2 shared cores the
 * clients cannot send enough to fill a Redis core (the report gives how busy
 * each was), so "one core at this cost" is a projection from the cost per
 * page; a busier Redis gets more pages per call, so likely an underestimate.
 * BENCH_SITES: domains (1,000).
 */
import { Redis } from 'ioredis';
import { bloomParams, bloomPositions } from '../src/crawl/dedupe/bloom.js';
import { decodeItem, encodeItem, queuedUrl, type QueuedUrl } from '../src/crawl/store/item.js';
import { LocalSeen } from '../src/crawl/dedupe/local-seen.js';
import { WORKER_DEFAULTS } from '../src/crawl/worker-options.js';
import { FairQueue, type Lease } from '../src/queue/index.js';
import { startRedis, type RedisServer } from '../test/helpers/redis.js';
import { redisUsage } from './redis-usage.js';
import { SeedDesignQueue } from './seed-design.js';

type Out = (name: string, value: string, note?: string) => void;

const SITES = Number(process.env.BENCH_SITES ?? 1000);
const PAGES = 35;
const NAV = 8;
const CROSS = 3;
const WORKERS = 2;
const LANES = 64;

const domainOf = (site: number): string => `s${site}.test`;
const urlOf = (site: number, page: number): string => `http://${domainOf(site)}/${page === 0 ? '' : `p/${page}`}`;

/** A page's links by domain, as the bench web's pages have them. */
function linksOf(site: number, page: number): [string, string[]][] {
  const own = [0, ...Array.from({ length: NAV }, (_, k) => k + 1), 2 * page + 1, 2 * page + 2].filter((p) => p < PAGES && p !== page);
  const out: [string, string[]][] = [[domainOf(site), [...new Set(own)].map((p) => urlOf(site, p))]];
  for (let k = 1; k <= CROSS; k++) {
    const other = (site + k) % SITES;
    out.push([domainOf(other), [urlOf(other, 0)]]);
  }
  return out;
}

function parse(url: string): [number, number] {
  const m = /^http:\/\/s(\d{1,9})\.test\/(?:p\/(\d{1,9}))?$/.exec(url);
  if (!m) throw new Error(`not a bench URL: ${url}`);
  return [Number(m[1]), Number(m[2] ?? 0)];
}

interface Run {
  pages: number;
  seconds: number;
  /** Redis CPU s, and the client process's. */
  redisCpu: number;
  clientCpu: number;
}

async function measured(redis: Redis, work: () => Promise<number>): Promise<Run> {
  const before = await redisUsage(redis);
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const pages = await work();
  const seconds = (performance.now() - t0) / 1000;
  const c = process.cpuUsage(c0);
  const after = await redisUsage(redis);
  return { pages, seconds, redisCpu: after.cpu - before.cpu, clientCpu: (c.user + c.system) / 1e6 };
}

/** weir: WORKERS clients × LANES lanes, commit-and-take and the link path, until every page is done. */
async function weirTraffic(server: RedisServer, redis: Redis): Promise<Run> {
  const arena = 'capacity';
  const admin = new FairQueue(redis);
  await admin.setLimits(arena, Object.fromEntries(Array.from({ length: SITES }, (_, s) => [domainOf(s), { rate: 'unlimited' as const, maxInFlight: 4 }])));
  const bloom = bloomParams(100_000, 1e-6);
  await admin.configureDedupe(arena, bloom);
  const workers = Array.from({ length: WORKERS }, () => {
    const client = new Redis({ port: server.port, host: '127.0.0.1' });
    const queue = new FairQueue(client, { lingerMs: WORKER_DEFAULTS.lingerMs, spareLeases: WORKER_DEFAULTS.spareLeases });
    return { client, queue, seen: new LocalSeen(100_000) };
  });
  const total = SITES * PAGES;
  let done = 0;
  const stop = new AbortController();
  const offer = async (w: (typeof workers)[number], byDomain: [string, string[]][], depth: number): Promise<void> => {
    const fresh = byDomain.map(([d, urls]) => [d, urls.filter((u) => !w.seen.has(u))] as const).filter(([, urls]) => urls.length > 0);
    const offered = fresh.flatMap(([, urls]) => urls);
    w.seen.offering(offered);
    const items = (urls: readonly string[]): QueuedUrl[] => urls.map((u) => queuedUrl(u, { depth }));
    await Promise.all(fresh.map(([d, urls]) => w.queue.enqueue(arena, d, items(urls).map(encodeItem), { dedupe: urls.map((u) => bloomPositions(u, bloom)) })));
    w.seen.settle(offered, true);
  };
  const run = await measured(redis, async () => {
    await offer(workers[0] as (typeof workers)[number], Array.from({ length: SITES }, (_, s) => [domainOf(s), [urlOf(s, 0)]]), 0);
    await Promise.all(
      workers.flatMap((w) =>
        Array.from({ length: LANES }, async () => {
          let lease: Lease | null = null;
          while (!stop.signal.aborted) {
            if (!lease) {
              lease = (await w.queue.dequeue(arena)).lease;
              // (Nothing ready: the other lanes' pages have the links still to come.)
              if (!lease) await new Promise((r) => setTimeout(r, 2));
              continue;
            }
            const item = decodeItem(lease.item) as QueuedUrl;
            const [site, page] = parse(item.url);
            await offer(w, linksOf(site, page), item.depth + 1);
            // (A page is done when its commit is: the next take may wait for work, the way a worker's lane does, until the last page's commit stops them all.)
            const step = w.queue.commitAndTake(lease, { signal: stop.signal });
            void step.committed.then(() => {
              if (++done === total) stop.abort();
            });
            lease = await step.next.catch(() => null);
          }
          if (lease) await w.queue.commit(lease);
        }),
      ),
    );
    return done;
  });
  for (const w of workers) w.client.disconnect();
  return run;
}

/** The seed design: dequeue, enqueue the page's links no page offered before, commit; 128 loops. */
async function seedTraffic(redis: Redis): Promise<Run> {
  const arena = 'capacity';
  const q = new SeedDesignQueue(redis.duplicate());
  await q.defineRateLimits(arena, Object.fromEntries(Array.from({ length: SITES }, (_, s) => [domainOf(s), 1e9])));
  const offered = new Set<string>();
  const total = SITES * PAGES;
  let done = 0;
  const offer = async (byDomain: [string, string[]][]): Promise<void> => {
    for (const [d, urls] of byDomain)
      for (const u of urls)
        if (!offered.has(u)) {
          offered.add(u);
          await q.enqueue(arena, d, u);
        }
  };
  return measured(redis, async () => {
    await offer(Array.from({ length: SITES }, (_, s) => [domainOf(s), [urlOf(s, 0)]]));
    await Promise.all(
      Array.from({ length: WORKERS * LANES }, async () => {
        while (done < total) {
          const got = await q.dequeue(arena);
          if (!got) {
            await new Promise((r) => setTimeout(r, 2));
            continue;
          }
          const [site, page] = parse(got.item);
          await offer(linksOf(site, page));
          await q.commit(got.txnid);
          done++;
        }
      }),
    );
    return done;
  });
}

function report(out: Out, name: string, r: Run, note: string): number {
  const us = (r.redisCpu * 1e6) / r.pages;
  out(`${name}: pages/s`, Math.round(r.pages / r.seconds).toLocaleString('en-US'), `${r.pages} pages; Redis busy ${((100 * r.redisCpu) / r.seconds).toFixed(0)} % of a core, the client process ${((100 * r.clientCpu) / r.seconds).toFixed(0)} % ${note}`);
  out(`${name}: Redis CPU per page (µs)`, us.toFixed(1), `one Redis core at this cost: ${Math.round(1e6 / us).toLocaleString('en-US')} pages/s`);
  return us;
}

/** `work` against a fresh redis-server, destroyed after (with the clients it made). */
async function onFreshRedis(work: (server: RedisServer, redis: Redis) => Promise<Run>): Promise<Run> {
  const server = await startRedis();
  try {
    return await work(server, server.client());
  } finally {
    await server.destroy();
  }
}

export async function redisCapacityBenchmarks(out: Out): Promise<void> {
  const runs: [string, (server: RedisServer, redis: Redis) => Promise<Run>][] = [
    ['weir', weirTraffic],
    ['seed design', (_server, redis) => seedTraffic(redis)],
  ];
  const cost: number[] = [];
  for (const [name, run] of runs) cost.push(report(out, `${SITES.toLocaleString('en-US')} domains × ${PAGES} pages, Redis traffic alone: ${name}`, await onFreshRedis(run), name === 'weir' ? `(${WORKERS} workers × ${LANES} lanes in it)` : `(${WORKERS * LANES} loops)`));
  out('Redis traffic alone: weir ÷ seed design, Redis CPU per page', ((cost[0] ?? 0) / (cost[1] ?? 1)).toFixed(2), 'the seed design with no dedupe, fairness or pacing of its own');
}
