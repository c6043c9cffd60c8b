/**
 * A static site in a process of its own, so the arrival times it records
 * are stamped by an event loop nothing else in the test keeps busy (hostile
 * servers, spawned workers). Arguments: a JSON {routes, fallback}; route
 * values are bodies (robots.txt as text, the rest as HTML, or {type, base64};
 * "{{self}}" in a text body is the site's origin). Protocol over
 * IPC: it sends {port} when listening; send 'log' for [{path, at, lag}],
 * 'exit' to stop. It runs at a raised priority where allowed, and measures
 * its own stamping lag (stamps.ts).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:http';
import { setPriority } from 'node:os';
import { arrivalLog, serveOverIpc } from './stamps.js';
import type { RecordedRequest } from './web.js';

/** A body as text (robots.txt as text/plain, the rest as HTML), or bytes of a given type. */
type Body = string | { type: string; base64: string };

interface SiteSpec {
  routes: Record<string, Body>;
  fallback?: string;
}

export interface SiteProcess {
  origin: string;
  /** Domain key "127.0.0.1:<port>". */
  key: string;
  /** The requests the site saw, with its own clock. */
  log(): Promise<RecordedRequest[]>;
  close(): Promise<void>;
}

/** Starts `spec` as a site in a child process. */
export async function startSiteProcess(name: string, spec: SiteSpec): Promise<SiteProcess> {
  const child: ChildProcess = fork(new URL(import.meta.url).pathname, [JSON.stringify(spec)], { execArgv: ['--import', 'tsx'], stdio: 'ignore' });
  const port = await new Promise<number>((resolve) => child.once('message', (m: { port: number }) => resolve(m.port)));
  try {
    if (child.pid !== undefined) setPriority(child.pid, -10);
  } catch {
    // not permitted: its measured lag still keeps the judging honest
  }
  return {
    origin: `http://127.0.0.1:${port}`,
    key: `127.0.0.1:${port}`,
    log: () =>
      new Promise((resolve) => {
        child.once('message', (m: { log: { path: string; at: number; lag: number }[] }) => resolve(m.log.map((r) => ({ site: name, path: r.path, at: r.at, lag: r.lag, userAgent: '' }))));
        child.send('log');
      }),
    close: () =>
      new Promise((resolve) => {
        child.once('exit', () => resolve());
        child.send('exit');
      }),
  };
}

// Run as the child: serve the spec.
if (process.send && process.argv[2]?.startsWith('{')) {
  const spec = JSON.parse(process.argv[2]) as SiteSpec;
  const { log, stamp } = arrivalLog();
  const server = createServer((req, res) => {
    const path = req.url ?? '/';
    stamp(path);
    const body = spec.routes[path] ?? spec.fallback;
    if (body === undefined) {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('no');
      return;
    }
    if (typeof body !== 'string') {
      res.writeHead(200, { 'content-type': body.type });
      res.end(Buffer.from(body.base64, 'base64'));
      return;
    }
    res.writeHead(200, { 'content-type': path === '/robots.txt' ? 'text/plain' : path.endsWith('.txt') ? 'text/plain' : path.endsWith('.xml') ? 'application/xml' : 'text/html' });
    res.end(body.replaceAll('{{self}}', `http://127.0.0.1:${(server.address() as { port: number }).port}`));
  });
  serveOverIpc(server, log);
}
