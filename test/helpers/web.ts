/**
 * A multi-site fixture web on 127.0.0.1: each site is its own HTTP server on
 * its own port. Every request is recorded with the server's own clock and
 * how late that stamp may be (the test process stalls too), so tests judge
 * politeness from what the servers saw, to the precision they can vouch for.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { stampClock, type Arrival } from './stamps.js';

export interface RecordedRequest extends Arrival {
  site: string;
  userAgent: string;
}

export type Handler = (req: IncomingMessage, res: ServerResponse, ctx: { site: FixtureSite; count: number }) => void | Promise<void>;

export interface FixtureSite {
  name: string;
  port: number;
  origin: string;
  /** Domain key "127.0.0.1:<port>". */
  key: string;
  server: Server;
}

export class FixtureWeb {
  readonly requests: RecordedRequest[] = [];
  readonly sites = new Map<string, FixtureSite>();
  private readonly counts = new Map<string, number>();
  private readonly clock = stampClock();

  async site(name: string, routes: Record<string, Handler | string>, fallback?: Handler): Promise<FixtureSite> {
    const server = createServer((req, res) => {
      const path = req.url ?? '/';
      this.requests.push({ site: name, path, ...this.clock.stamp(), userAgent: String(req.headers['user-agent'] ?? '') });
      const key = `${name} ${path}`;
      const count = (this.counts.get(key) ?? 0) + 1;
      this.counts.set(key, count);
      const route = routes[path] ?? routes[path.split('?')[0] ?? ''];
      const site = this.sites.get(name) as FixtureSite;
      if (typeof route === 'string') {
        const isRobots = path === '/robots.txt';
        res.writeHead(200, { 'content-type': isRobots ? 'text/plain' : 'text/html; charset=utf-8' });
        res.end(route.replaceAll('{{self}}', site.origin));
        return;
      }
      if (route) {
        void route(req, res, { site, count });
        return;
      }
      if (fallback) {
        void fallback(req, res, { site, count });
        return;
      }
      res.writeHead(404, { 'content-type': 'text/html' });
      res.end('<h1>not found</h1>');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const site: FixtureSite = { name, port, origin: `http://127.0.0.1:${port}`, key: `127.0.0.1:${port}`, server };
    this.sites.set(name, site);
    return site;
  }

  of(site: string): RecordedRequest[] {
    return this.requests.filter((r) => r.site === site);
  }

  fetched(site: string, path: string): number {
    return this.requests.filter((r) => r.site === site && r.path === path).length;
  }

  async close(): Promise<void> {
    this.clock.stop();
    for (const s of this.sites.values()) {
      s.server.closeAllConnections();
      await new Promise((r) => s.server.close(r));
    }
  }
}

/**
 * The smallest gap between consecutive requests to a site that the site can
 * vouch for, ms (server clock): each gap widened by the earlier stamp's lag
 * (that request may have arrived up to `lag` before it was stamped).
 */
export function smallestGap(reqs: Arrival[]): number {
  return closestPair(reqs).gap;
}

/** smallestGap, and the requests around it in arrival order (for a miss's message). */
export function closestPair(reqs: Arrival[]): { gap: number; around: Arrival[] } {
  const sorted = [...reqs].sort((a, b) => a.at - b.at);
  let gap = Infinity;
  let at = 0;
  for (let i = 1; i < sorted.length; i++) {
    const [a, b] = [sorted[i - 1], sorted[i]] as [Arrival, Arrival];
    if (b.at - a.at + a.lag < gap) [gap, at] = [b.at - a.at + a.lag, i];
  }
  return { gap, around: sorted.slice(Math.max(0, at - 2), at + 2) };
}

/** Requests as "path@ms+lag" (ms from `from`; lag: how late the site may have stamped it), to tell what came too close. */
export const requestTimes = (reqs: Arrival[], from: number): string => reqs.map((r) => `${r.path}@${(r.at - from).toFixed(1)}+${r.lag.toFixed(1)}`).join(' ');

export const html = (body: string, head = ''): string => `<!doctype html><html><head><title>fixture</title>${head}</head><body>${body}</body></html>`;

/**
 * A binary tree of `pages` HTML pages: "/" is page 0, "/p/N" page N, each
 * linking to its two children. Optionally each answer waits `delayMs`.
 */
export function treeSite(pages: number, delayMs = 0): Handler {
  return async (req, res) => {
    const n = Number(/^\/p\/(\d+)$/.exec(req.url ?? '')?.[1] ?? (req.url === '/' ? 0 : -1));
    if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
    if (n < 0 || n >= pages) {
      res.writeHead(404, { 'content-type': 'text/html' });
      res.end('no');
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(html([2 * n + 1, 2 * n + 2].filter((k) => k < pages).map((k) => `<a href="/p/${k}">${k}</a>`).join(' ')));
  };
}
