/**
 * A crawl judged by a strict server (strict-server.ts): a synthetic web of
 * tree sites (bench/web.ts), each behind nginx `limit_req` at exactly the
 * rate weir is given, no burst, crawled by `weir worker` processes (the
 * esbuild bundle) on one redis-server or a 3-master Cluster, optionally with
 * a CPU hog beside them or a worker SIGKILLed mid-crawl. What nginx refused
 * and the gaps it saw are the verdict. Shared by the tests and bench:crawl's
 * strict part.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { startSyntheticWeb, type SiteSpec } from '../../bench/web.js';
import { kickoff } from '../../src/crawl/kickoff.js';
import { storableSeed, validateSeed } from '../../src/crawl/seed/seed.js';
import { connectRedis } from '../../src/redis.js';
import { cliBundle } from './cli-bundle.js';
import { startCluster, startRedis } from './redis.js';
import { startStrictServer, strictVerdict, type StrictArrival } from './strict-server.js';

export interface StrictCrawl {
  sites: number;
  /** Requests per second, the same for weir and nginx. */
  rate: number;
  pages: number;
  workers: number;
  concurrency: number;
  cluster?: boolean;
  /** A process spinning on a core beside the workers. */
  hog?: boolean;
  /** SIGKILL the first worker this long into the crawl. */
  killAtMs?: number;
  /** A crawl still running after this long is stopped (SIGTERM) and judged as it stands. */
  capMs: number;
  /** Where the seed file goes. */
  dir: string;
}

export interface StrictResult {
  arrivals: StrictArrival[];
  /** Requests nginx refused, per site. */
  refused: number[];
  /** The smallest gap each site saw by nginx's stamps, ms. */
  smallestGap: number[];
  /** Pages the sites served (200, robots.txt aside), and how many there are. */
  pages: number;
  expectedPages: number;
  /** Pacing efficiency of the busiest site: its requests − 1 over its rate, ÷ the span of its requests. */
  efficiency: number;
  wallMs: number;
  /** The workers' exit codes (null: killed). */
  exits: (number | null)[];
  /** The sites' origins, by site index (as the arrivals name them). */
  origins: string[];
  /** Each URL's writes by the workers, epoch ms (their debug log's "request written"). */
  written: Map<string, number[]>;
}

/** Latencies from 20 to 300 ms, spread over the sites. */
const latency = (i: number): number => 20 + ((i * 37) % 281);

const exited = (p: ChildProcess): Promise<number | null> => new Promise((r) => (p.exitCode !== null || p.signalCode !== null ? r(p.exitCode) : p.once('exit', (c) => r(c))));

export async function strictCrawl(s: StrictCrawl): Promise<StrictResult> {
  const specs: SiteSpec[] = Array.from({ length: s.sites }, (_, i) => ({ pages: s.pages, latencyMs: latency(i), nav: 3 }));
  const web = await startSyntheticWeb(specs);
  const strict = await startStrictServer(web.origins.map((upstream) => ({ upstream, rate: s.rate })));
  const cluster = s.cluster ? await startCluster() : undefined;
  const single = s.cluster ? undefined : await startRedis();
  const url = cluster ? `redis://127.0.0.1:${cluster.ports[0]}` : (single?.url as string);
  const hog = s.hog ? spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' }) : undefined;
  try {
    const seed = validateSeed({
      arena: 'strict',
      rateLimits: Object.fromEntries(strict.keys.map((k) => [k, s.rate])),
      start: strict.origins.map((o) => `${o}/`),
      allowPrivateNetworks: true,
      maxInFlightPerDomain: 4,
    });
    const seedPath = join(s.dir, `strict-${process.pid}.json`);
    await writeFile(seedPath, JSON.stringify(storableSeed(seed)));
    const client = await connectRedis(url);
    await kickoff(client, seed);
    client.disconnect();
    const t0 = performance.now();
    const written = new Map<string, number[]>();
    const logsRead: Promise<void>[] = [];
    const workers = Array.from({ length: s.workers }, () => {
      const w = spawn(process.execPath, [cliBundle(), 'worker', seedPath, '--redis', url, '--exit-when-done', '--concurrency', String(s.concurrency), '--lease-ms', '5000'], {
        stdio: ['ignore', 'ignore', 'pipe'],
        env: { ...process.env, WEIR_LOG_LEVEL: 'debug', WEIR_LOG_FORMAT: 'json' },
      });
      logsRead.push(readWrites(w, written));
      return w;
    });
    const kill = s.killAtMs === undefined ? undefined : setTimeout(() => workers[0]?.kill('SIGKILL'), s.killAtMs);
    const cap = setTimeout(() => workers.forEach((w) => w.kill('SIGTERM')), s.capMs);
    const exits = await Promise.all(workers.map(exited));
    // (A process's exit may come before the last of its log is read.)
    await Promise.all(logsRead);
    clearTimeout(kill);
    clearTimeout(cap);
    const wallMs = performance.now() - t0;
    const arrivals = await strict.finish();
    const v = strictVerdict(arrivals, s.sites);
    const bySite = new Array<number>(s.sites).fill(0);
    for (const a of arrivals) bySite[a.site] = (bySite[a.site] ?? 0) + 1;
    const busiest = bySite.indexOf(Math.max(...bySite));
    const times = arrivals.filter((a) => a.site === busiest).map((a) => a.at);
    return {
      arrivals,
      refused: v.refused,
      smallestGap: v.smallestGap,
      pages: web.log.filter((r) => r.status === 200 && r.path !== '/robots.txt').length,
      expectedPages: s.sites * s.pages,
      efficiency: ((bySite[busiest] as number) - 1) / s.rate / ((Math.max(...times) - Math.min(...times)) / 1000),
      wallMs,
      exits,
      origins: strict.origins,
      written,
    };
  } finally {
    hog?.kill('SIGKILL');
    await strict.stop();
    await web.close();
    await cluster?.destroy();
    await single?.destroy();
  }
}

/**
 * A worker's debug log, read for its writes ("request written": url,
 * wroteAt) into `written`; its warnings and errors go on to stderr.
 * Resolves once the log has been read to its end.
 */
function readWrites(worker: ChildProcess, written: Map<string, number[]>): Promise<void> {
  let rest = '';
  worker.stderr?.setEncoding('utf8');
  const take = (lines: string[]): void => {
    for (const line of lines) {
      const e = parsed(line);
      if (e?.msg === 'request written' && e.url && e.wroteAt) {
        const at = written.get(e.url);
        if (at) at.push(e.wroteAt);
        else written.set(e.url, [e.wroteAt]);
      } else if (line !== '' && (!e || (e.level ?? 0) >= 40)) process.stderr.write(`${line}\n`);
    }
  };
  worker.stderr?.on('data', (d: string) => {
    const lines = (rest + d).split('\n');
    rest = lines.pop() ?? '';
    take(lines);
  });
  return new Promise((resolve) => {
    if (!worker.stderr) return resolve();
    worker.stderr.once('close', () => {
      take([rest]);
      resolve();
    });
  });
}

/** What readWrites looks at in a worker's JSON log line. */
interface LogLine {
  level?: number;
  msg?: string;
  url?: string;
  wroteAt?: number;
}

function parsed(line: string): LogLine | null {
  try {
    return JSON.parse(line) as LogLine;
  } catch {
    return null;
  }
}

/** The smallest gap between two writes to each site (by its origin), ms; Infinity for a site written to once or never. */
export function smallestWriteGaps(r: Pick<StrictResult, 'origins' | 'written'>): number[] {
  const bySite = new Map<string, number[]>(r.origins.map((o) => [o, []]));
  for (const [url, at] of r.written) bySite.get(new URL(url).origin)?.push(...at);
  return r.origins.map((o) => {
    const at = (bySite.get(o) ?? []).sort((a, b) => a - b);
    let least = Infinity;
    for (let i = 1; i < at.length; i++) least = Math.min(least, (at[i] as number) - (at[i - 1] as number));
    return least;
  });
}

/**
 * Each refusal beside the request nginx let through before it, and, where
 * the workers' log has them, how far apart the two were written and how
 * long after its write nginx stamped each: "site 3 /p/9 498 ms after /p/8
 * (written 531 ms after it; stamped 2 and 35 ms after their writes)". A
 * gap written whole and stamped short was lost between the write and the
 * judge; one written short is weir's.
 */
export function refusals(r: Pick<StrictResult, 'arrivals' | 'origins' | 'written'>): string[] {
  // (The write of a request nginx stamped at `at`: the URL's last before it, nginx stamping in whole ms.)
  const writeOf = (a: StrictArrival): number | undefined => r.written.get(`${r.origins[a.site]}${a.path}`)?.filter((w) => w <= a.at + 1).at(-1);
  const ms = (x: number): string => x.toFixed(1);
  return r.arrivals
    .filter((a) => a.refused)
    .map((refused) => {
      const prev = r.arrivals.filter((a) => a.site === refused.site && !a.refused && a.at <= refused.at).at(-1);
      if (!prev) return `site ${refused.site} ${refused.path} first`;
      const [w, wPrev] = [writeOf(refused), writeOf(prev)];
      const writes = w !== undefined && wPrev !== undefined ? ` (written ${ms(w - wPrev)} ms after it; stamped ${ms(prev.at - wPrev)} and ${ms(refused.at - w)} ms after their writes)` : ' (writes not in the log)';
      return `site ${refused.site} ${refused.path} ${refused.at - prev.at} ms after ${prev.path}${writes}`;
    });
}

/** The verdict: nothing refused, every page fetched, every gap at least 1/R by nginx's stamps. */
export function judgeStrict(t: TestContext, s: Omit<StrictCrawl, 'dir'>, r: StrictResult): void {
  const refused = r.refused.reduce((a, b) => a + b, 0);
  const least = Math.min(...r.smallestGap);
  const leastWritten = Math.min(...smallestWriteGaps(r));
  const writes = [...r.written.values()].reduce((n, at) => n + at.length, 0);
  t.diagnostic(`${r.arrivals.length} requests, ${refused} refused; smallest gap ${least} ms (1/R ${1000 / s.rate}), ${leastWritten.toFixed(1)} ms as written (${writes} writes); busiest site's efficiency ${r.efficiency.toFixed(3)}; ${r.pages}/${r.expectedPages} pages in ${(r.wallMs / 1000).toFixed(1)} s`);
  assert.equal(refused, 0, `nginx refused ${refused}: ${refusals(r).join('; ')}`);
  // The workers' own account covers every request nginx saw (a worker
  // SIGKILLed between a write and its log line leaves that one out: at most
  // one a lane), and has each site's writes an interval apart and more.
  const unlogged = s.killAtMs === undefined ? 0 : s.concurrency;
  assert.ok(writes >= r.arrivals.length - unlogged, `${writes} writes in the workers' logs for ${r.arrivals.length} requests`);
  assert.ok(leastWritten >= 1000 / s.rate, `writes to a site ${leastWritten.toFixed(1)} ms apart`);
  assert.ok(r.pages >= r.expectedPages, `${r.pages} of ${r.expectedPages} pages fetched`);
  // (nginx stamps in whole ms: a gap it let through is at least 1/R to the ms.)
  assert.ok(least >= Math.floor(1000 / s.rate) - 1, `smallest gap ${least} ms`);
}

