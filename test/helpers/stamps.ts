/**
 * Arrival stamps for a judging site in a process of its own (tree-server.ts,
 * site-process.ts), with the site's own precision measured: a timer ticks
 * every millisecond, and each arrival records `lag`, how late it may have
 * been stamped. After a stall the timer phase runs before the I/O that
 * waited, so the tick before last tells when the stall began; two ticks'
 * worth (2 ms) is taken off. Seen here: stalls up to ~20 ms on two cores
 * shared with Redis and workers, even at a raised priority.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RecordedRequest } from './web.js';

export interface Arrival {
  path: string;
  at: number;
  lag: number;
}

export interface StampedRequest extends RecordedRequest {
  /** How late this arrival may have been stamped: the site's own stall before it, ms. */
  lag: number;
}

/** A log of arrivals and the function that stamps one. */
export function arrivalLog(): { log: Arrival[]; stamp: (path: string) => void } {
  const log: Arrival[] = [];
  let lastTick = performance.now();
  let prevTick = lastTick;
  setInterval(() => {
    prevTick = lastTick;
    lastTick = performance.now();
  }, 1);
  return {
    log,
    stamp: (path) => {
      const at = performance.now();
      log.push({ path, at, lag: Math.max(0, at - prevTick - 2) });
    },
  };
}

/**
 * The child's side of the IPC protocol: sends {port} once `server` listens
 * on 127.0.0.1; answers 'log' with {log}; 'exit' closes and exits.
 */
export function serveOverIpc(server: Server, log: Arrival[]): void {
  server.listen(0, '127.0.0.1', () => process.send?.({ port: (server.address() as AddressInfo).port }));
  process.on('message', (m) => {
    if (m === 'log') process.send?.({ log });
    if (m === 'exit') server.close(() => process.exit(0));
  });
}

/**
 * The smallest gap between consecutive arrivals that the site can vouch
 * for: each gap widened by the earlier stamp's lag (that request may have
 * arrived up to `lag` before it was stamped).
 */
export function judgedGap(reqs: { at: number; lag: number }[]): number {
  const sorted = [...reqs].sort((a, b) => a.at - b.at);
  let gap = Infinity;
  for (let i = 1; i < sorted.length; i++) {
    const [a, b] = [sorted[i - 1], sorted[i]] as [Arrival, Arrival];
    gap = Math.min(gap, b.at - a.at + a.lag);
  }
  return gap;
}
