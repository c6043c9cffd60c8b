import type { Socket } from 'node:net';
import type { buildConnector } from 'undici';
import { connectorOf } from './undici.js';
import type { LookupFunction } from './netguard.js';

const DEFAULT_PORTS: Record<string, string> = { 'http:': '80', 'https:': '443' };

function keyOf(protocol: string, hostname: string, port: string): string {
  return `${protocol}//${hostname.replace(/^\[|\]$/g, '')}:${port || (DEFAULT_PORTS[protocol] ?? '')}`;
}

interface Spare {
  socket: Promise<Socket>;
  timer: NodeJS.Timeout;
}

/**
 * undici's connector, plus connections opened ahead of a request.
 *
 * Why: politeness is decided as serve times in Redis, and a worker sends
 * each request at a fixed offset from its slot. A request on a new
 * connection reaches the server later than one on a warm connection (TCP,
 * and TLS, handshakes first), so the gap the server sees after it would be
 * short by the handshake. Opening the connection before the slot's send time
 * takes the handshake out of the gap.
 */
export class WarmConnector {
  private readonly base: buildConnector.connector;
  private readonly spares = new Map<string, Spare[]>();
  private readonly open = new Map<string, number>();
  private readonly busy = new Map<string, number>();

  constructor(options: { lookup: LookupFunction; timeoutMs: number }) {
    this.base = connectorOf({ lookup: options.lookup, timeout: options.timeoutMs });
  }

  /** The `connect` option for an undici Agent. */
  readonly connect = (opts: buildConnector.Options, cb: buildConnector.Callback): void => {
    const key = keyOf(opts.protocol, opts.hostname, opts.port);
    const spare = this.spares.get(key)?.shift();
    if (spare) {
      clearTimeout(spare.timer);
      spare.socket.then(
        (s) => {
          if (s.destroyed) return this.fresh(key, opts, cb);
          this.track(key, s);
          cb(null, s);
        },
        () => this.fresh(key, opts, cb),
      );
      return;
    }
    this.fresh(key, opts, cb);
  };

  private fresh(key: string, opts: buildConnector.Options, cb: buildConnector.Callback): void {
    this.base(opts, (err, socket) => {
      if (err || !socket) return cb(err ?? new Error('no socket'), null);
      this.track(key, socket);
      cb(null, socket);
    });
  }

  private track(key: string, socket: Socket): void {
    this.open.set(key, (this.open.get(key) ?? 0) + 1);
    socket.once('close', () => this.open.set(key, Math.max(0, (this.open.get(key) ?? 1) - 1)));
  }

  /** A request to `url` starts / ends (so warm() knows whether an idle connection exists). */
  begin(url: URL): void {
    const key = keyOf(url.protocol, url.hostname, url.port);
    this.busy.set(key, (this.busy.get(key) ?? 0) + 1);
  }

  end(url: URL): void {
    const key = keyOf(url.protocol, url.hostname, url.port);
    this.busy.set(key, Math.max(0, (this.busy.get(key) ?? 1) - 1));
  }

  /**
   * Opens a connection to `url`'s origin now unless an idle one exists, and
   * resolves when it is up (or failed: the request will then fail the same
   * way by itself). Unused spares are closed after 10 s.
   */
  async warm(url: URL): Promise<void> {
    const key = keyOf(url.protocol, url.hostname, url.port);
    const spares = this.spares.get(key) ?? [];
    if ((this.open.get(key) ?? 0) + spares.length > (this.busy.get(key) ?? 0)) return;
    const socket = new Promise<Socket>((resolve, reject) => {
      this.base(
        { protocol: url.protocol, hostname: url.hostname, host: url.host, port: url.port, servername: url.hostname },
        (err, s) => (err || !s ? reject(err ?? new Error('no socket')) : resolve(s)),
      );
    });
    const spare: Spare = {
      socket,
      timer: setTimeout(() => {
        const list = this.spares.get(key);
        const i = list?.indexOf(spare) ?? -1;
        if (list && i >= 0) list.splice(i, 1);
        socket.then((s) => s.destroy(), () => undefined);
      }, 10_000),
    };
    spare.timer.unref();
    spares.push(spare);
    this.spares.set(key, spares);
    await socket.then(
      () => undefined,
      () => undefined,
    );
  }

  close(): void {
    for (const list of this.spares.values()) {
      for (const s of list) {
        clearTimeout(s.timer);
        s.socket.then((sock) => sock.destroy(), () => undefined);
      }
    }
    this.spares.clear();
  }
}
