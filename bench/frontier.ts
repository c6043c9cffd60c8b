/**
 * A simulated crawl over a million domains on a local 3-master Redis
 * Cluster (BENCH_PART=frontier of npm run bench:crawl): a web generated on
 * the fly by one loopback HTTP server that answers any host name
 * (s<i>.sim), each page linking 16 pages of its own site (40 a site) and 4
 * of other sites chosen by a hash; BENCH_SIM_DOMAINS (default 1,000,000)
 * domains listed in a domain file, each with its home page as a start URL,
 * kicked off by the built `weir kickoff`; BENCH_SIM_WORKERS (default 4)
 * worker processes (the crawler's own, bench/sim-worker.ts, names resolved
 * to 127.0.0.1) for BENCH_SIM_SECONDS (default 300). Every 5 s: pages
 * done, each master's Redis CPU and commands, each master's memory, URLs
 * queued. Reported: Redis CPU and commands per request (pages and
 * robots.txt fetches: every domain's first request is its robots.txt) in
 * the first and last tenth of the run (by time), and memory as the
 * frontier grows; then the same for the page phase (from the sample after
 * which robots.txt fetches are at most ROBOTS_SHARE of every 5 s): Redis
 * CPU a page over it and in its first and last tenths, commands a page,
 * memory per URL the frontier gained.
 */
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { crawlKeys } from '../src/crawl/store/keys.js';
import { FairQueue } from '../src/queue/index.js';
import { threeMasters, usageOf } from './cluster-cost.js';
import { builtCli } from './cpu.js';
import { writeGzLines } from './kickoff-files.js';
import { callsBetween, sum, totalCalls, usedMemoryOn, type RedisUsage } from './redis-usage.js';

type Out = (name: string, value: string, note?: string) => void;

const run = promisify(execFile);
const PAGES_PER_SITE = 40;
const OWN_LINKS = 16;
const OTHER_LINKS = 4;

/** murmur3's finalizer: a well-spread 32-bit hash of a few integers. */
function mix(...xs: number[]): number {
  let h = 0x9e3779b9;
  for (const x of xs) {
    h = Math.imul(h ^ x, 0x85ebca6b);
    h ^= h >>> 13;
    h = Math.imul(h, 0xc2b2ae35);
    h ^= h >>> 16;
  }
  return h >>> 0;
}

/** The simulated web: any s<i>.sim host, pages /p/0 .. /p/39, robots.txt absent. */
async function simulatedWeb(domains: number): Promise<{ port: number; served: () => number; close: () => Promise<void> }> {
  let served = 0;
  const server = createServer((req, res) => {
    const host = /^s(\d+)\.sim(?::\d+)?$/.exec(req.headers.host ?? '');
    const page = /^\/p\/(\d+)$/.exec(req.url ?? '');
    if (!host || !page) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not here');
      return;
    }
    served++;
    const site = Number(host[1]);
    const k = Number(page[1]);
    const port = (server.address() as AddressInfo).port;
    const links: string[] = [];
    for (let j = 0; j < OWN_LINKS; j++) links.push(`<a href="/p/${mix(site, k, j) % PAGES_PER_SITE}">page</a>`);
    for (let j = 0; j < OTHER_LINKS; j++) {
      const other = mix(site, k, j, 7) % domains;
      links.push(`<a href="http://s${other}.sim:${port}/p/${mix(other, j) % PAGES_PER_SITE}">elsewhere</a>`);
    }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(`<!doctype html><title>s${site} p${k}</title><p>A page of site ${site}.</p>${links.join('\n')}`);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: (server.address() as AddressInfo).port,
    served: () => served,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

interface Sample {
  at: number;
  /** Requests done: pages, robots.txt fetches, redirect hops (a new domain's first request is its robots.txt). */
  requests: number;
  pages: number;
  /** robots.txt fetches done (one a domain): the page phase starts once they are nearly none of the requests (pagePhaseStart). */
  robots: number;
  queued: number;
  usage: RedisUsage[];
  memory: number[];
}

/** Redis CPU µs (total and per master) and commands per request between two samples. */
function between(a: Sample, b: Sample): { requests: number; pages: number; cpu: number[]; commands: number } {
  const requests = Math.max(1, b.requests - a.requests);
  return {
    requests: b.requests - a.requests,
    pages: b.pages - a.pages,
    cpu: b.usage.map((u, i) => ((u.cpu - (a.usage[i]?.cpu ?? 0)) * 1e6) / requests),
    commands: sum(b.usage.map((u, i) => totalCalls(callsBetween(a.usage[i] as RedisUsage, u)))) / requests,
  };
}

/** A run's samples in tenths by time: the samples around tenth t (the last at or before its start, the first at or after its end). */
function tenthOf(samples: Sample[], t: number): [Sample, Sample] {
  const first = samples[0] as Sample;
  const last = samples.at(-1) as Sample;
  const span = last.at - first.at;
  const from = first.at + (span * t) / 10;
  const to = first.at + (span * (t + 1)) / 10;
  return [[...samples].reverse().find((s) => s.at <= from + 1) ?? first, samples.find((s) => s.at >= to - 1) ?? last];
}

/** The commands Redis ran most between two samples (those inside scripts counted), each per `per` (pages or requests). */
function topCalls(a: Sample, b: Sample, per: number): string {
  const calls = new Map<string, number>();
  b.usage.forEach((u, i) => {
    for (const [cmd, n] of callsBetween(a.usage[i] as RedisUsage, u)) calls.set(cmd, (calls.get(cmd) ?? 0) + n);
  });
  return [...calls]
    .sort((x, y) => y[1] - x[1])
    .slice(0, 10)
    .map(([cmd, n]) => `${cmd} ${(n / Math.max(1, per)).toFixed(1)}`)
    .join(', ');
}

/** The share of a 5 s sample's requests that may be robots.txt fetches in the page phase. */
const ROBOTS_SHARE = 0.02;

/** The index of the sample from which every later interval is pages nearly only (ROBOTS_SHARE), or -1 (none: the crawl never got there, or its last interval did not). */
function pagePhaseStart(samples: readonly Sample[]): number {
  let start = -1;
  for (let i = samples.length - 2; i >= 0; i--) {
    const a = samples[i] as Sample;
    const b = samples[i + 1] as Sample;
    if (b.robots - a.robots > ROBOTS_SHARE * Math.max(1, b.requests - a.requests)) break;
    start = i;
  }
  return start;
}

export async function frontierBenchmarks(out: Out, dir: string): Promise<void> {
  const domains = Number(process.env.BENCH_SIM_DOMAINS ?? 1_000_000);
  const workers = Number(process.env.BENCH_SIM_WORKERS ?? 4);
  const seconds = Number(process.env.BENCH_SIM_SECONDS ?? 300);
  const cli = builtCli();
  const web = await simulatedWeb(domains);
  const nodes = await threeMasters();
  const client = nodes.client();
  const queue = new FairQueue(client);
  try {
    await writeGzLines(join(dir, 'sim-domains.csv.gz'), domains, (i) => `s${i}.sim,10,2`);
    await writeGzLines(join(dir, 'sim-start.txt.gz'), domains, (i) => `http://s${i}.sim:${web.port}/p/0`);
    const seedPath = join(dir, 'sim.yaml');
    await writeFile(seedPath, ['arena: sim', 'domainFiles: [sim-domains.csv.gz]', 'startFiles: [sim-start.txt.gz]', 'allowPrivateNetworks: true', 'sitemaps: false', 'bloom: { expectedUrls: 20000000, falsePositiveRate: 0.000001 }', ''].join('\n'));
    const k0 = performance.now();
    await run(process.execPath, [cli, 'kickoff', seedPath, '--redis', nodes.url], { env: { ...process.env, WEIR_LOG_LEVEL: 'warn' }, maxBuffer: 16 * 1024 * 1024 });
    out(`simulated crawl: kickoff of ${domains.toLocaleString('en-US')} listed domains and their home pages, 3 masters`, `${((performance.now() - k0) / 1000).toFixed(0)} s`, '');
    const statsKey = crawlKeys('sim', queue).stats;
    const sample = async (): Promise<Sample> => {
      const [counts, stats, usage, memory] = await Promise.all([client.hmget(statsKey, '*:pages', '*:robotsFetches', '*:redirects'), queue.stats('sim'), usageOf(nodes.ports), usedMemoryOn(nodes.ports)]);
      const [pages, robots, redirects] = counts.map((c) => Number(c ?? 0)) as [number, number, number];
      return { at: performance.now(), requests: pages + robots + redirects, pages, robots, queued: stats.queued + stats.delayed, usage, memory };
    };
    const samples: Sample[] = [await sample()];
    const summaries: { dequeues: number; emptyDequeues: number; wakeups: number }[] = [];
    const procs = Array.from({ length: workers }, () => {
      const p = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'sim-worker.ts'), nodes.url, seedPath, String(seconds)], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, WEIR_LOG_LEVEL: 'warn' } });
      let text = '';
      p.stdout.on('data', (d: Buffer) => (text += d.toString()));
      p.on('exit', () => {
        if (text.trim()) summaries.push(JSON.parse(text) as (typeof summaries)[number]);
      });
      return p;
    });
    const exited = Promise.all(procs.map((p) => once(p, 'exit')));
    let done = false;
    void exited.then(() => (done = true));
    while (!done) {
      await new Promise((r) => setTimeout(r, 5000));
      samples.push(await sample());
    }
    const first = samples[0] as Sample;
    const last = samples.at(-1) as Sample;
    const span = last.at - first.at;
    const early = between(...tenthOf(samples, 0));
    const late = between(...tenthOf(samples, 9));
    const all = between(first, last);
    out(`simulated crawl: ${workers} workers, ${(span / 1000).toFixed(0)} s`, `${all.requests.toLocaleString('en-US')} requests`, `${((all.requests * 1000) / span).toFixed(0)}/s: ${all.pages.toLocaleString('en-US')} pages (${web.served().toLocaleString('en-US')} served), the rest robots.txt (each new domain's first request); frontier (queued and waiting) ${first.queued.toLocaleString('en-US')} → ${last.queued.toLocaleString('en-US')}`);
    const row = (c: { cpu: number[]; requests: number; pages: number; commands: number }): string => `per master ${c.cpu.map((x) => x.toFixed(0)).join(' / ')} µs; ${c.commands.toFixed(1)} commands per request; ${c.requests.toLocaleString('en-US')} requests, ${c.pages.toLocaleString('en-US')} of them pages`;
    out('Redis CPU per request, first tenth', `${sum(early.cpu).toFixed(0)} µs`, row(early));
    out('Redis CPU per request, last tenth', `${sum(late.cpu).toFixed(0)} µs`, row(late));
    out('last tenth / first tenth (Redis CPU per request)', (sum(late.cpu) / sum(early.cpu)).toFixed(2), 'target ≤ 1.2');
    // The page phase: from the first sample after which every 5 s holds
    // pages nearly only (robots.txt fetches at most ROBOTS_SHARE of its
    // requests), so its first tenth compares pages with pages, not with the
    // last domains' robots.txt (when it began at 99 % of the domains' robots.txt,
    // that first tenth was still a quarter robots.txt).
    const reached = pagePhaseStart(samples);
    const pagePhase = reached < 0 ? [] : samples.slice(reached);
    if (pagePhase.length >= 3) {
      const a = between(...tenthOf(pagePhase, 0));
      const b = between(...tenthOf(pagePhase, 9));
      const p0 = pagePhase[0] as Sample;
      out(`page phase: from ${((p0.at - first.at) / 1000).toFixed(0)} s, ${((last.at - p0.at) / 1000).toFixed(0)} s long`, `${(last.pages - p0.pages).toLocaleString('en-US')} pages`, `${(((last.pages - p0.pages) * 1000) / Math.max(1, last.at - p0.at)).toFixed(0)}/s; frontier ${p0.queued.toLocaleString('en-US')} → ${last.queued.toLocaleString('en-US')}`);
      const whole = between(p0, last);
      out('page phase: Redis CPU per page, the whole phase', `${sum(whole.cpu).toFixed(0)} µs`, `${row(whole)}; ${((last.queued - p0.queued) / Math.max(1, whole.pages)).toFixed(1)} URLs added to the frontier per page`);
      out('page phase: Redis CPU per request, first tenth', `${sum(a.cpu).toFixed(0)} µs`, row(a));
      out('page phase: Redis CPU per request, last tenth', `${sum(b.cpu).toFixed(0)} µs`, row(b));
      out('page phase: last tenth / first tenth', (sum(b.cpu) / sum(a.cpu)).toFixed(2), 'target ≤ 1.2');
      out('page phase: commands per page, the most called (inside scripts counted)', topCalls(p0, last, last.pages - p0.pages), '');
      out('page phase: Redis memory', `${(sum(p0.memory) / 2 ** 30).toFixed(2)} → ${(sum(last.memory) / 2 ** 30).toFixed(2)} GiB`, `${((sum(last.memory) - sum(p0.memory)) / Math.max(1, last.queued - p0.queued)).toFixed(0)} B per URL added to the frontier`);
    } else {
      out('page phase', reached < 0 ? 'not reached' : 'too short to measure', `robots.txt fetched for ${last.robots.toLocaleString('en-US')} of ${domains.toLocaleString('en-US')} domains (the phase starts once they are at most ${ROBOTS_SHARE * 100} % of every 5 s's requests): a longer BENCH_SIM_SECONDS measures it`);
    }
    const top = topCalls(first, last, all.requests);
    const w = { dequeues: sum(summaries.map((x) => x.dequeues)), empty: sum(summaries.map((x) => x.emptyDequeues)), wakeups: sum(summaries.map((x) => x.wakeups)) };
    out('commands per request, the most called (inside scripts counted)', top, `workers' dequeue calls per request ${(w.dequeues / Math.max(1, all.requests)).toFixed(2)}, empty ones ${(w.empty / Math.max(1, all.requests)).toFixed(2)}, wake-ups ${w.wakeups}`);
    out('Redis memory as the frontier grew', `${(sum(first.memory) / 2 ** 30).toFixed(2)} → ${(sum(last.memory) / 2 ** 30).toFixed(2)} GiB`, `per master ${first.memory.map((m) => (m / 2 ** 30).toFixed(2)).join(' / ')} → ${last.memory.map((m) => (m / 2 ** 30).toFixed(2)).join(' / ')} GiB (the first master holds the arena's crawler keys: robots.txt cache, domain list, counters); ${((sum(last.memory) - sum(first.memory)) / Math.max(1, all.requests)).toFixed(0)} B per request`);
  } finally {
    await queue.close();
    client.disconnect();
    await nodes.close();
    await web.close();
  }
}
