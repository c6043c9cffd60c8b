import { subscribe } from 'node:diagnostics_channel';
import { isIP } from 'node:net';
import type { Dispatcher } from 'undici';
import { Agent, request } from './undici.js';
import { decodeStages, destroyStages, readCapped } from './body.js';
import { ExchangeCapture, type RevisitOf, type Truncation, type WarcLocation, type WarcWriter } from '../output/index.js';
import { WarmConnector } from './connector.js';
import { isWeirError } from '../../errors.js';
import { FetchError } from './errors.js';
import { guardedLookup, isPrivateAddress, PrivateAddressError, type LookupFunction } from './netguard.js';

export { FetchError };

export interface FetcherOptions {
  userAgent: string;
  /** Whole-request deadline (connect + headers + body). */
  timeoutMs: number;
  /** Most body bytes read, counted after decompression. */
  maxBodyBytes: number;
  allowPrivateNetworks: boolean;
  /** Connections kept per origin. Default 4. */
  connectionsPerOrigin?: number;
  /** Injectable DNS for tests. */
  lookup?: LookupFunction;
  /** Every exchange (request as sent, response as received) goes into these WARC files. */
  archive?: WarcWriter | undefined;
}

export interface FetchOptions {
  /** Decides from the response whether the body is read and decoded (with an archive, every body is read for the record). */
  wantBody: (contentType: string | null, status: number) => boolean;
  signal?: AbortSignal | undefined;
  gate?: SendGate | undefined;
  /** Most (decoded) body bytes read, when not the fetcher's maxBodyBytes. */
  maxBytes?: number | undefined;
  /** Takes a wanted body chunk by chunk instead of it being kept (returns false to stop reading); `body` is then empty. */
  sink?: ((chunk: Buffer) => boolean) | undefined;
  /**
   * Connect to this address, whatever the host resolves to now (politeness
   * per server: the server whose pace the request was sent by is the one
   * asked). Connections to one address are kept apart from those to another.
   */
  address?: string | undefined;
  /** More request headers (a revisit's If-None-Match and If-Modified-Since). */
  headers?: Record<string, string> | undefined;
  /** A revisit's: the capture a 304 answer confirms (archived as a revisit record referring to it). */
  revisitOf?: RevisitOf | undefined;
}

/** Servers whose connections are kept at once (politeness per server); the least recently used one is closed past this. */
const MAX_ADDRESS_ROUTES = 256;

/** An agent and its connector: the default route resolves each host; an address's route connects every host there. */
interface Route {
  agent: Agent;
  connector: WarmConnector;
}

export interface FetchResult {
  url: string;
  status: number;
  headers: Record<string, string | string[] | undefined>;
  contentType: string | null;
  /** The decompressed body when it was wanted and read. */
  body: Buffer | null;
  /** Decompressed bytes read (or Content-Length for bodies not read). */
  bytes: number;
  /** The body was cut at maxBodyBytes. */
  truncated: boolean;
  elapsedMs: number;
  /** Where its response record starts, when archiving. */
  warc: WarcLocation | null;
}

const ACCEPT = 'text/html,application/xhtml+xml;q=0.9,*/*;q=0.5';

/**
 * The pacer's say over one request as undici writes it (diagnostics
 * channels, published synchronously around the socket write).
 * `mayGo` is asked just before the headers are written: a request past
 * its send window is not sent at all (its socket is destroyed before
 * anything is written) and its fetch fails with WEIR_LATE. `wrote` is told
 * just after the write (undici:request:bodySent: weir's requests have no
 * body), so what it reports (lease/pacer.ts) follows the write whatever stalled
 * the process between the two.
 */
export interface SendGate {
  mayGo(at: number): boolean;
  wrote(at: number): void;
}

/**
 * What one fetch asks of its request as undici handles it: the send gate,
 * the WARC capture, and whether the gate stopped it. Registered under the
 * key a request is known by until undici creates it (origin + path), then
 * held by undici's request object (creation is published synchronously
 * inside request(), before any await).
 */
interface RequestHooks {
  gate?: SendGate | undefined;
  /** The gate that let the request go, told when it was written. */
  sent?: SendGate | undefined;
  capture?: ExchangeCapture | null;
  stoppedLate?: boolean;
  /** The socket it was written to (its parser knows the response's HTTP version). */
  socket?: object;
}
const pendingHooks = new Map<string, RequestHooks>();
const hooksOf = new WeakMap<object, RequestHooks>();
const requestKey = (r: { origin?: string | URL; path?: string }): string => `${String(r.origin ?? '').replace(/\/$/, '')}${r.path ?? ''}`;
subscribe('undici:request:create', (message) => {
  const { request: r } = message as { request: { origin?: string | URL; path?: string } };
  const key = requestKey(r);
  const hooks = pendingHooks.get(key);
  if (!hooks) return;
  pendingHooks.delete(key);
  hooksOf.set(r, hooks);
});
subscribe('undici:client:sendHeaders', (message) => {
  const { request: r, headers, socket } = message as { request: object; headers: string; socket: { destroy(err?: Error): void; remoteAddress?: string } };
  const hooks = hooksOf.get(r);
  if (!hooks) return;
  const { gate } = hooks;
  hooks.gate = undefined;
  if (gate && !gate.mayGo(performance.now())) {
    hooks.stoppedLate = true;
    socket.destroy(new Error('not sent: too late for its rate slot'));
    return;
  }
  hooks.sent = gate;
  hooks.socket = socket;
  hooks.capture?.onSent(headers, socket.remoteAddress ?? null);
});
subscribe('undici:request:bodySent', (message) => {
  const hooks = hooksOf.get((message as { request: object }).request);
  const gate = hooks?.sent;
  if (!hooks || !gate) return;
  hooks.sent = undefined;
  gate.wrote(performance.now());
});
subscribe('undici:request:headers', (message) => {
  const { request: r, response } = message as { request: object; response: { statusCode: number; statusText: string; headers: Buffer[] } };
  const hooks = hooksOf.get(r);
  // A 1xx (103 Early Hints) is an interim response, not the response: not archived.
  if (!hooks?.capture || response.statusCode < 200) return;
  hooks.capture.onResponse(httpVersionOf(hooks.socket), response.statusCode, response.statusText, response.headers);
});

/**
 * The HTTP version of the response being read on `socket`, from undici's
 * llhttp parser (undici says it nowhere else); "1.1" when it cannot be read
 * (weir's agent speaks HTTP/1.x only).
 */
function httpVersionOf(socket: object | undefined): string {
  const key = socket ? Object.getOwnPropertySymbols(socket).find((s) => s.description === 'parser') : undefined;
  const parser = key ? (socket as Record<symbol, { ptr?: number; llhttp?: Record<string, (ptr: number) => number> } | null>)[key] : null;
  const major = parser?.ptr !== undefined ? parser.llhttp?.llhttp_get_http_major?.(parser.ptr) : undefined;
  const minor = parser?.ptr !== undefined ? parser.llhttp?.llhttp_get_http_minor?.(parser.ptr) : undefined;
  return major === 1 && (minor === 0 || minor === 1) ? `1.${minor}` : '1.1';
}

/** How long past its deadline a request may stay unsettled before it is abandoned. */
export const WATCHDOG_GRACE_MS = 2000;

/**
 * Settles as `work` does, or rejects with `expired()` once `ms` have passed,
 * whatever `work` does then (its late result or error is dropped). A fetch
 * ends by its deadline even if the HTTP client never settles.
 */
export function watchdog<T>(work: Promise<T>, ms: number, expired: () => Error): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(expired()), ms);
    work.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(timer);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}

/**
 * GETs one URL with undici: never follows redirects (the caller queues each
 * hop), cuts every request at an overall deadline (a server that trickles a
 * byte a second is cut off, not just one that goes quiet), counts the body
 * after decompression as it streams and stops at the limit (so a compressed
 * bomb costs at most maxBodyBytes), and always consumes or destroys the body.
 */
export class Fetcher {
  private readonly main: Route;
  private readonly byAddress = new Map<string, Route>();

  constructor(private readonly options: FetcherOptions) {
    this.main = this.route(options.lookup ?? guardedLookup(options.allowPrivateNetworks));
  }

  private route(lookup: LookupFunction): Route {
    const connector = new WarmConnector({ lookup, timeoutMs: Math.min(this.options.timeoutMs, 10_000) });
    const agent = new Agent({
      connections: this.options.connectionsPerOrigin ?? 4,
      headersTimeout: this.options.timeoutMs,
      bodyTimeout: this.options.timeoutMs,
      connect: connector.connect,
      maxResponseSize: -1,
    });
    return { agent, connector };
  }

  /** The route a request takes: to `address` when given (kept, most recently used last), else the host's own. */
  private routeTo(address: string | undefined): Route {
    if (address === undefined) return this.main;
    let r = this.byAddress.get(address);
    if (r) {
      this.byAddress.delete(address);
    } else {
      const family = isIP(address);
      const allowed = this.options.allowPrivateNetworks || !isPrivateAddress(address);
      r = this.route((hostname, opts, cb) => {
        if (!allowed) return cb(new PrivateAddressError(hostname, address), '');
        if (opts.all) cb(null, [{ address, family }]);
        else cb(null, address, family);
      });
      const oldest = this.byAddress.keys().next();
      if (this.byAddress.size >= MAX_ADDRESS_ROUTES && !oldest.done) {
        const old = this.byAddress.get(oldest.value);
        this.byAddress.delete(oldest.value);
        old?.connector.close();
        // (Requests in flight on it finish first.)
        void old?.agent.close().catch(() => undefined);
      }
    }
    this.byAddress.set(address, r);
    return r;
  }

  /** Refuses private IP literals (they never go through lookup). */
  private checkLiteral(u: URL, elapsedMs: number): void {
    const host = u.hostname.replace(/^\[|\]$/g, '');
    if (!this.options.allowPrivateNetworks && isIP(host) !== 0 && isPrivateAddress(host)) {
      throw new FetchError('WEIR_PRIVATE_ADDRESS', new PrivateAddressError(host, host).message, elapsedMs);
    }
  }

  /**
   * Gets a connection to `url`'s origin ready before the request's send time
   * (see WarmConnector). Never throws: a connection that fails here fails the
   * request the same way.
   */
  async prepare(url: string, address?: string): Promise<void> {
    try {
      const u = new URL(url);
      this.checkLiteral(u, 0);
      await this.routeTo(address).connector.warm(u);
    } catch {
      // reported by fetch()
    }
  }

  /**
   * Fetches `url`; `wantBody(contentType, status)` decides whether the body
   * is read and decoded. With an archive, the exchange is recorded as it
   * happens (every body read, raw, up to the limit) and its record written
   * before this resolves, also when the fetch fails after the request went.
   */
  async fetch(url: string, opts: FetchOptions): Promise<FetchResult> {
    const started = performance.now();
    const elapsed = (): number => Math.round(performance.now() - started);
    const u = new URL(url);
    this.checkLiteral(u, elapsed());
    const sentKey = `${u.origin}${u.pathname}${u.search}`;
    const capture = this.options.archive ? new ExchangeCapture(url, this.options.archive, opts.revisitOf) : null;
    const hooks: RequestHooks = { gate: opts.gate, capture };
    if (opts.gate || capture) pendingHooks.set(sentKey, hooks);
    const route = this.routeTo(opts.address);
    route.connector.begin(u);
    const abandon = new AbortController();
    const signal = opts.signal ? AbortSignal.any([opts.signal, abandon.signal]) : abandon.signal;
    try {
      const res = await watchdog(this.get(route.agent, url, opts, started, signal, capture), this.options.timeoutMs + WATCHDOG_GRACE_MS, () => {
        abandon.abort();
        return new FetchError('WEIR_TIMEOUT', 'abandoned: the HTTP client did not settle within the request deadline', elapsed());
      });
      return { ...res, warc: capture ? await capture.finish(res.truncated ? 'length' : null) : null };
    } catch (err) {
      if (hooks.stoppedLate) throw new FetchError('WEIR_LATE', 'not sent: it would have left too late for its rate slot', elapsed(), { cause: err });
      // What was sent and received is recorded, cut where it stopped; the fetch's
      // own error is the one reported, unless the record could not be written.
      const unarchived = capture && !isWeirError(err, 'WEIR_WARC') ? await capture.finish(truncationOf(err)).then(() => null, (e: unknown) => e) : null;
      throw unarchived ?? err;
    } finally {
      if (pendingHooks.get(sentKey) === hooks) pendingHooks.delete(sentKey);
      route.connector.end(u);
    }
  }

  private async get(agent: Agent, url: string, opts: FetchOptions, started: number, outer?: AbortSignal, capture?: ExchangeCapture | null): Promise<Omit<FetchResult, 'warc'>> {
    const elapsed = (): number => Math.round(performance.now() - started);
    const deadline = AbortSignal.timeout(this.options.timeoutMs);
    const signal = outer ? AbortSignal.any([deadline, outer]) : deadline;
    const maxBytes = opts.maxBytes ?? this.options.maxBodyBytes;
    let res: Dispatcher.ResponseData;
    try {
      res = await request(url, {
        dispatcher: agent,
        method: 'GET',
        headers: { ...opts.headers, 'user-agent': this.options.userAgent, accept: ACCEPT, 'accept-encoding': 'gzip, deflate, br' },
        signal,
      });
    } catch (err) {
      throw FetchError.from(err, elapsed(), deadline.aborted);
    }
    const headers = res.headers as Record<string, string | string[] | undefined>;
    const ctHeader = headers['content-type'];
    const contentType = (Array.isArray(ctHeader) ? ctHeader[0] : ctHeader) ?? null;
    const raw = res.body;
    const result = { url, status: res.statusCode, headers, contentType };
    if (!opts.wantBody(contentType, res.statusCode)) {
      try {
        if (!capture) {
          const len = Number(headers['content-length']);
          return { ...result, body: null, bytes: Number.isFinite(len) ? len : 0, truncated: false, elapsedMs: elapsed() };
        }
        // Archived: read (not kept) up to the limit, for the record.
        const read = await readCapped(raw, maxBytes, false, capture.take);
        return { ...result, body: null, bytes: read.bytes, truncated: read.truncated, elapsedMs: elapsed() };
      } catch (err) {
        throw FetchError.from(err, elapsed(), deadline.aborted);
      } finally {
        destroyStages([res.body, raw]);
      }
    }
    const body = decodeStages(raw, headers['content-encoding']);
    // The archive's raw bytes: handed over by the reader when nothing decodes them, else seen beside the decoders' pipe (the raw body flows).
    const decoded = body.stages.length > 1;
    if (capture && decoded) raw.on('data', capture.take);
    try {
      if (!body.stream) throw new FetchError('WEIR_BAD_ENCODING', `unsupported content-encoding ${body.unsupported}`, elapsed());
      const read = await readCapped(body.stream, maxBytes, opts.sink ?? true, decoded ? undefined : capture?.take);
      return { ...result, ...read, elapsedMs: elapsed() };
    } catch (err) {
      throw FetchError.from(err, elapsed(), deadline.aborted);
    } finally {
      destroyStages([res.body, ...body.stages]);
    }
  }

  /**
   * Makes a few requests to a throwaway server on loopback, so undici's lazy
   * start-up (its HTTP parser is compiled on first use) and this code path's
   * first, unoptimised runs happen now, not between a slot's send time and
   * its first real request (several ms late, seen in a fresh worker).
   */
  async warmUp(): Promise<void> {
    const { createServer } = await import('node:http');
    const server = createServer((_req, res) => res.end('ok'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as { port: number };
    try {
      // Through this fetcher's own agent and code path (an IP literal: no lookup, so no guard to pass).
      for (let i = 0; i < 3; i++) await this.get(this.main.agent, `http://127.0.0.1:${port}/`, { wantBody: () => true }, performance.now());
    } catch {
      // warming only
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  }

  async close(): Promise<void> {
    const routes = [this.main, ...this.byAddress.values()];
    this.byAddress.clear();
    for (const r of routes) r.connector.close();
    await Promise.all(routes.map((r) => r.agent.destroy()));
  }
}

/** Why a failed fetch's body stopped: its deadline, or the connection. */
function truncationOf(err: unknown): Truncation {
  return err instanceof FetchError && err.code === 'WEIR_TIMEOUT' ? 'time' : 'disconnect';
}

/** Is this content type one weir parses for links? */
export function isHtml(contentType: string | null): boolean {
  if (contentType === null) return false;
  const t = contentType.split(';')[0]?.trim().toLowerCase();
  return t === 'text/html' || t === 'application/xhtml+xml';
}
