/**
 * Synthetic webs for the pace benchmarks: N sites on 127.0.0.1, each a
 * binary tree of HTML pages ("/" is page 0, "/p/N" links to its two
 * children), answering after a fixed latency, with optional robots.txt
 * Crawl-delay and optional traps (pages that first answer 429 or 503 with
 * Retry-After). Every request is logged with the server's own clock.
 */
import { spawn } from 'node:child_process';
import type { RequestListener } from 'node:http';
import { cliBundle } from '../test/helpers/cli-bundle.js';
import { smallestGap } from '../test/helpers/web.js';
import { listenSites, type Sites } from './sites.js';

export interface SiteSpec {
  pages: number;
  latencyMs: number;
  crawlDelay?: number;
  /** Every page also links to "/" and /p/1 .. /p/nav, as a site's navigation bar does. */
  nav?: number;
  /** Every page also links to the front pages of the next `cross` sites of the web. */
  cross?: number;
  /** Page numbers that answer `status` with Retry-After `retryAfter` s the first `times` times. */
  traps?: { page: number; status: 429 | 503; retryAfter: number; times: number }[];
}

export interface SyntheticWeb extends Sites {
  log: { site: number; path: string; at: number; status: number }[];
  reset(): void;
}

const page = (n: number, spec: SiteSpec, others: string[]): string => {
  const nav = Array.from({ length: Math.min(spec.nav ?? 0, spec.pages - 1) }, (_, k) => `<a href="/p/${k + 1}">section ${k + 1}</a>`);
  const links = [2 * n + 1, 2 * n + 2].filter((k) => k < spec.pages).map((k) => `<a href="/p/${k}">page ${k}</a>`);
  const cross = others.map((o) => `<a href="${o}/">elsewhere</a>`);
  return `<!doctype html><html><head><title>page ${n}</title></head><body>${spec.nav ? `<nav><a href="/">home</a> ${nav.join(' ')}</nav>` : ''}<h1>${n}</h1>${links.join(' ')}<p>${'filler text '.repeat(40)}</p>${cross.join(' ')}</body></html>`;
};

export async function startSyntheticWeb(specs: SiteSpec[]): Promise<SyntheticWeb> {
  const log: SyntheticWeb['log'] = [];
  let origins: string[] = [];
  const crossOf = (i: number, spec: SiteSpec): string[] => Array.from({ length: Math.min(spec.cross ?? 0, origins.length - 1) }, (_, k) => origins[(i + k + 1) % origins.length] as string);
  const handler = (i: number, spec: SiteSpec): RequestListener => {
    const tripped = new Map<number, number>();
    return (req, res) => {
      const at = performance.now();
      const path = req.url ?? '/';
      const send = (status: number, body: string, headers: Record<string, string> = {}): void => {
        log.push({ site: i, path, at, status });
        res.writeHead(status, { 'content-type': path === '/robots.txt' ? 'text/plain' : 'text/html', ...headers });
        res.end(body);
      };
      if (path === '/robots.txt') return send(200, `User-agent: *\n${spec.crawlDelay ? `Crawl-delay: ${spec.crawlDelay}\n` : ''}Allow: /\n`);
      const n = path === '/' ? 0 : Number(/^\/p\/(\d+)$/.exec(path)?.[1] ?? -1);
      if (n < 0 || n >= spec.pages) return send(404, 'no');
      const trap = spec.traps?.find((t) => t.page === n);
      setTimeout(() => {
        if (trap && (tripped.get(n) ?? 0) < trap.times) {
          tripped.set(n, (tripped.get(n) ?? 0) + 1);
          return send(trap.status, 'slow down', { 'retry-after': String(trap.retryAfter) });
        }
        send(200, page(n, spec, crossOf(i, spec)));
      }, spec.latencyMs);
    };
  };
  const sites = await listenSites(specs.map((spec, i) => handler(i, spec)));
  origins = sites.origins;
  return { ...sites, log, reset: () => void log.splice(0) };
}

/**
 * The many-domain web the crawl benches share (BENCH_PART=redis,
 * redis-count, cluster and polite of bench:crawl): `sites` sites of 35
 * pages, 20–300 ms latency, a navigation bar of 8 links on every page and
 * links to 3 other sites' front pages.
 */
export function startManyDomainWeb(sites = 100): Promise<SyntheticWeb> {
  return startSyntheticWeb(Array.from({ length: sites }, (_, i) => ({ pages: 35, latencyMs: 20 + ((i * 37) % 281), nav: 8, cross: 3 })));
}

/** Its seed (YAML): every site at `rate`, its front pages to start, 4 in flight a domain, a Bloom filter sized for it. */
export function manyDomainSeed(web: SyntheticWeb, rate: string, arena = 'cost'): string {
  return [`arena: ${arena}`, 'rateLimits:', ...web.keys.map((k) => `  "${k}": ${rate}`), 'start:', ...web.origins.map((o) => `  - ${o}/`), 'allowPrivateNetworks: true', 'maxInFlightPerDomain: 4', 'bloom: { expectedUrls: 100000, falsePositiveRate: 0.000001 }', ''].join('\n');
}

/** A request the crawl benches count as a page: served with 200, not robots.txt. */
export const isPageServed = (r: { path: string; status: number }): boolean => r.status === 200 && r.path !== '/robots.txt';

/**
 * `weir crawl SEED --workers 2` (the bundled command: cli-bundle.ts)
 * against `redisUrl`, its records to `outPath`, logging only warnings; its
 * exit code.
 */
export function crawlQuietly(seedPath: string, concurrency: number, outPath: string, redisUrl: string): Promise<number | null> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [cliBundle(), 'crawl', seedPath, '--workers', '2', '--concurrency', String(concurrency), '--out', outPath, '--redis', redisUrl], { stdio: 'ignore', env: { ...process.env, WEIR_LOG_LEVEL: 'warn' } });
    p.on('exit', resolve);
  });
}

/** Requests per site, from the log. */
export function requestsBySite(log: SyntheticWeb['log'], sites: number): number[] {
  const n = new Array<number>(sites).fill(0);
  for (const r of log) n[r.site] = (n[r.site] ?? 0) + 1;
  return n;
}

/** Smallest gap between two requests to one site, ms (server clock; these stamps' own lag is not measured). */
export function smallestGapBySite(log: SyntheticWeb['log'], site: number): number {
  return smallestGap(log.filter((r) => r.site === site).map((r) => ({ path: r.path, at: r.at, lag: 0 })));
}
