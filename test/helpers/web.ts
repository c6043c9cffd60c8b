/**
 * A multi-site fixture web on 127.0.0.1: each site is its own HTTP server on
 * its own port. Every request is recorded with the server's own clock, so
 * tests judge politeness from what the servers saw.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  site: string;
  path: string;
  /** performance.now() of the server process when the request arrived, ms. */
  at: number;
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

  async site(name: string, routes: Record<string, Handler | string>, fallback?: Handler): Promise<FixtureSite> {
    const server = createServer((req, res) => {
      const path = req.url ?? '/';
      this.requests.push({ site: name, path, at: performance.now(), userAgent: String(req.headers['user-agent'] ?? '') });
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
    for (const s of this.sites.values()) {
      s.server.closeAllConnections();
      await new Promise((r) => s.server.close(r));
    }
  }
}

/** Smallest gap between consecutive requests to a site, ms (server clock). */
export function smallestGap(reqs: RecordedRequest[]): number {
  const t = reqs.map((r) => r.at).sort((a, b) => a - b);
  let min = Infinity;
  for (let i = 1; i < t.length; i++) min = Math.min(min, (t[i] as number) - (t[i - 1] as number));
  return min;
}

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
