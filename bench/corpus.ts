/**
 * The crawl benchmark's corpus: Debian's python3-doc HTML (about 530 pages
 * of Python documentation), served by plain static servers on 127.0.0.1,
 * one origin per port. Every request is recorded with this process's clock.
 */
import { existsSync, realpathSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { RequestListener } from 'node:http';
import { extname, join, normalize } from 'node:path';
import { listenSites, type Sites } from './sites.js';

export const DOC_ROOT_CANDIDATES = ['/usr/share/doc/python3-doc/html', '/usr/share/doc/python3.11-doc/html', '/usr/share/doc/python3.12-doc/html', '/usr/share/doc/python3.13-doc/html'];

export function findCorpus(): string | null {
  for (const c of DOC_ROOT_CANDIDATES) if (existsSync(join(c, 'index.html'))) return realpathSync(c);
  return null;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css',
  '.js': 'application/javascript',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
  '.txt': 'text/plain',
  '.json': 'application/json',
};

export interface CorpusServers extends Sites {
  /** Arrival times (performance.now()) of requests per origin index, with paths. */
  log: { origin: number; path: string; at: number; status: number }[];
  reset(): void;
}

export async function serveCorpus(root: string, count: number): Promise<CorpusServers> {
  const log: CorpusServers['log'] = [];
  const handler =
    (i: number): RequestListener =>
    (req, res) => {
      const at = performance.now();
      const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
      const respond = (status: number, type: string, body: Buffer | string): void => {
        log.push({ origin: i, path, at, status });
        res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
        res.end(body);
      };
      if (path === '/robots.txt') return respond(200, 'text/plain', 'User-agent: *\nAllow: /\n');
      const file = normalize(join(root, path.endsWith('/') ? `${path}index.html` : path));
      if (!file.startsWith(root)) return respond(403, 'text/plain', 'no');
      readFile(file).then(
        (body) => respond(200, TYPES[extname(file)] ?? 'application/octet-stream', body),
        () => respond(404, 'text/html', '<h1>not found</h1>'),
      );
    };
  const sites = await listenSites(Array.from({ length: count }, (_, i) => handler(i)));
  return { ...sites, log, reset: () => void log.splice(0) };
}
