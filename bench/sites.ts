/** Benchmark sites: one plain HTTP server per handler on 127.0.0.1, each its own origin. */
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Sites {
  origins: string[];
  ports: number[];
  /** Domain keys: "127.0.0.1:<port>". */
  keys: string[];
  close(): Promise<void>;
}

export async function listenSites(handlers: RequestListener[]): Promise<Sites> {
  const servers: Server[] = [];
  for (const handler of handlers) {
    const server = createServer(handler);
    server.keepAliveTimeout = 30_000;
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    servers.push(server);
  }
  const ports = servers.map((s) => (s.address() as AddressInfo).port);
  return {
    origins: ports.map((p) => `http://127.0.0.1:${p}`),
    ports,
    keys: ports.map((p) => `127.0.0.1:${p}`),
    close: async () => {
      for (const s of servers) {
        s.closeAllConnections();
        await new Promise((r) => s.close(r));
      }
    },
  };
}
