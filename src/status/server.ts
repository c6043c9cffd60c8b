import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import { isIP, type AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { WeirError } from '../errors.js';
import type { StatusSource } from './source.js';
import { parseViewQuery, ViewQueryError } from './view.js';

/** Limits on what a client may ask: anything past them gets a status, never a stall. */
export const STATUS_SERVER_LIMITS = {
  maxUrlChars: 4096,
  /** A client must send its headers within this (slow clients can't hold sockets for minutes). */
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 15_000,
  keepAliveTimeoutMs: 5_000,
} as const;

const WEB_DIR = new URL('../../web/status/', import.meta.url);
const requireFrom = createRequire(import.meta.url);

interface Asset {
  type: string;
  body: Buffer;
}

/** The page and its scripts, read once; the chart library comes from the uplot package. */
function loadAssets(): Map<string, Asset> {
  const own = (name: string, type: string): Asset => ({ type, body: readFileSync(new URL(name, WEB_DIR)) });
  const lib = (path: string, type: string): Asset => ({ type, body: readFileSync(requireFrom.resolve(path)) });
  return new Map([
    ['/', own('index.html', 'text/html; charset=utf-8')],
    ['/assets/app.js', own('app.js', 'text/javascript; charset=utf-8')],
    ['/assets/style.css', own('style.css', 'text/css; charset=utf-8')],
    ['/assets/uPlot.iife.min.js', lib('uplot/dist/uPlot.iife.min.js', 'text/javascript; charset=utf-8')],
    ['/assets/uPlot.min.css', lib('uplot/dist/uPlot.min.css', 'text/css; charset=utf-8')],
  ]);
}

const HEADERS = {
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  // Scripts only from weir itself; uPlot sizes its elements with inline styles.
  'content-security-policy': "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'",
};

export interface StatusServer {
  /** http://host:port/ */
  url: string;
  close(): Promise<void>;
}

/** Serves the live status page of one arena (read-only) on host:port (port 0: any free one). */
export async function serveStatus(source: StatusSource, opts: { host: string; port: number; log?: Logger }): Promise<StatusServer> {
  const assets = loadAssets();
  source.warm();
  let hosts: HostCheck = () => false;
  const server = createServer((req, res) => {
    // A page at another name (DNS rebinding: a site the operator visits, its
    // name pointed at 127.0.0.1) must not read the arena through the browser.
    if (!hosts(req.headers.host)) return send(res, 421, { error: `misdirected: this page answers to ${opts.host}, localhost or an IP address` });
    void answer(req, res, source, assets).catch((err: unknown) => {
      opts.log?.warn({ err }, 'status page: request failed');
      send(res, 503, { error: `could not read the arena from Redis: ${err instanceof Error ? err.message : String(err)}` });
    });
  });
  server.headersTimeout = STATUS_SERVER_LIMITS.headersTimeoutMs;
  server.requestTimeout = STATUS_SERVER_LIMITS.requestTimeoutMs;
  server.keepAliveTimeout = STATUS_SERVER_LIMITS.keepAliveTimeoutMs;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => reject(new WeirError('WEIR_STATUS_PAGE', `status page: cannot listen on ${opts.host}:${opts.port}: ${err.code ?? err.message}`, { cause: err })));
    server.listen(opts.port, opts.host, resolve);
  });
  const { address, port } = server.address() as AddressInfo;
  hosts = hostCheck(opts.host);
  const host = address.includes(':') ? `[${address}]` : address;
  return {
    url: `http://${host}:${port}/`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** Whether a request's Host header names this server. */
type HostCheck = (header: string | undefined) => boolean;

/**
 * The Host headers the page answers: an IP address (no name to rebind),
 * `localhost`, or the name it was told to bind (`--host`). Any port: the
 * name alone decides against rebinding, and a tunnel or a container may
 * map the page to another port (ssh -L 9000:127.0.0.1:8090).
 */
export function hostCheck(bound: string): HostCheck {
  const own = bound.toLowerCase().replace(/^\[(.*)\]$/, '$1');
  return (header) => {
    if (!header) return false;
    let u: URL;
    try {
      u = new URL(`http://${header}`);
    } catch {
      return false;
    }
    if (u.username || u.password || u.pathname !== '/' || u.search || u.hash) return false;
    const name = u.hostname.replace(/^\[(.*)\]$/, '$1');
    return name === 'localhost' || name === own || isIP(name) !== 0;
  };
}

async function answer(req: IncomingMessage, res: ServerResponse, source: StatusSource, assets: Map<string, Asset>): Promise<void> {
  const raw = req.url ?? '/';
  if (raw.length > STATUS_SERVER_LIMITS.maxUrlChars) return send(res, 414, { error: `URL longer than ${STATUS_SERVER_LIMITS.maxUrlChars} characters` });
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.setHeader('allow', 'GET, HEAD');
    return send(res, 405, { error: 'read-only: GET or HEAD' });
  }
  const url = new URL(raw, 'http://status.invalid');
  const asset = assets.get(url.pathname);
  if (asset) {
    res.writeHead(200, { ...HEADERS, 'content-type': asset.type, 'content-length': asset.body.length });
    res.end(req.method === 'HEAD' ? undefined : asset.body);
    return;
  }
  if (url.pathname === '/api/status') return send(res, 200, await source.stats());
  if (url.pathname === '/api/view') {
    let query;
    try {
      query = parseViewQuery(url.searchParams);
    } catch (err) {
      if (err instanceof ViewQueryError) return send(res, 400, { error: err.message });
      throw err;
    }
    return send(res, 200, await source.view(query));
  }
  return send(res, 404, { error: 'no such page: try / or /api/status or /api/view' });
}

function send(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) return void res.destroy();
  // JSON can't hold Infinity/NaN: they become null (the CLI prints them).
  const text = JSON.stringify(body);
  res.writeHead(status, { ...HEADERS, 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(res.req.method === 'HEAD' ? undefined : text);
}
