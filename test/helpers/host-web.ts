/**
 * A web of many host names on a few loopback addresses: every name
 * resolves (through the crawler's injectable lookup, never real DNS) to one
 * of 127.0.0.2 … 127.0.0.<1 + addresses>, where one HTTP server each, all on
 * one port, answers for every name by its Host header. Several names share
 * an address, as many sites share a server. Each arrival is stamped with
 * the site's own clock (stamps.ts) and filed under its host name.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { guardedLookup, type LookupFunction } from '../../src/crawl/fetch/index.js';
import { stampClock, type Arrival } from './stamps.js';

export interface HostWebOptions {
  /** Host names served (lowercase); the web answers 404 for any other. */
  names: readonly string[];
  /** Loopback addresses the names are spread over (name i on address i mod addresses). */
  addresses: number;
  /** A page's body (HTML) or null for 404; robots.txt is asked for too. */
  page(name: string, path: string, origin: (name: string) => string): string | null;
}

export class HostWeb {
  /** Arrivals by host name (the Host header without its port). */
  readonly arrivals = new Map<string, Arrival[]>();
  /** The same arrivals by the address of the server they reached (each server's own log). */
  readonly byAddress = new Map<string, Arrival[]>();
  private readonly clock = stampClock();
  private readonly index: Map<string, number>;

  private constructor(
    private readonly options: HostWebOptions,
    private readonly servers: Server[],
    readonly port: number,
  ) {
    this.index = new Map(options.names.map((n, i) => [n, i]));
  }

  static async start(options: HostWebOptions): Promise<HostWeb> {
    for (let attempt = 0; ; attempt++) {
      const servers: Server[] = [];
      let web: HostWeb | undefined;
      const handler = (req: IncomingMessage, res: ServerResponse): void => web?.answer(req, res);
      try {
        let port = 0;
        for (let a = 0; a < options.addresses; a++) {
          const server = createServer(handler);
          servers.push(server);
          await new Promise<void>((resolve, reject) => {
            server.once('error', reject);
            server.listen(port, `127.0.0.${2 + a}`, () => resolve());
          });
          port = (server.address() as AddressInfo).port;
        }
        web = new HostWeb(options, servers, port);
        return web;
      } catch (err) {
        // Another process held the port on one of the addresses: all again, on a new port.
        await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
        if (attempt >= 5) throw err;
      }
    }
  }

  /** The address a name resolves to. */
  addressOf(name: string): string | null {
    const i = this.index.get(name);
    return i === undefined ? null : `127.0.0.${2 + (i % this.options.addresses)}`;
  }

  origin(name: string): string {
    return `http://${name}:${this.port}`;
  }

  /** The crawler's DNS: the web's names only, through weir's own guard; anything else is not found. */
  lookup(): LookupFunction {
    return guardedLookup(true, (hostname, _options, cb) => {
      const address = this.addressOf(hostname.toLowerCase());
      if (address === null) {
        const err: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
        err.code = 'ENOTFOUND';
        cb(err, []);
        return;
      }
      cb(null, [{ address, family: 4 }]);
    });
  }

  /** Page fetches (not robots.txt) by host name. */
  pages(name: string): Arrival[] {
    return (this.arrivals.get(name) ?? []).filter((a) => a.path !== '/robots.txt');
  }

  private answer(req: IncomingMessage, res: ServerResponse): void {
    const name = String(req.headers.host ?? '').replace(/:\d+$/, '').toLowerCase();
    const path = req.url ?? '/';
    const list = this.arrivals.get(name);
    const arrival = { path, ...this.clock.stamp() };
    if (list) list.push(arrival);
    else this.arrivals.set(name, [arrival]);
    const server = req.socket.localAddress ?? '?';
    const atServer = this.byAddress.get(server);
    if (atServer) atServer.push(arrival);
    else this.byAddress.set(server, [arrival]);
    const body = this.index.has(name) ? this.options.page(name, path, (n) => this.origin(n)) : null;
    if (body === null) {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found');
      return;
    }
    res.writeHead(200, { 'content-type': path === '/robots.txt' ? 'text/plain' : 'text/html; charset=utf-8' });
    res.end(body);
  }

  async close(): Promise<void> {
    this.clock.stop();
    await Promise.all(this.servers.map((s) => new Promise((r) => s.close(r))));
  }
}
