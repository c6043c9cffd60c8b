/**
 * Arrival stamps for a judging site (FixtureWeb in the test process;
 * tree-web.ts, site-process.ts in their own), with the site's own
 * precision measured: a timer ticks
 * every millisecond, and each arrival records `lag`, how late it may have
 * been stamped. After a stall the timer phase runs before the I/O that
 * waited, so the tick before last tells when the stall began; two ticks'
 * worth (2 ms) is taken off. Seen here: stalls up to ~20 ms on two cores
 * shared with Redis and workers, even at a raised priority.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Arrival {
  path: string;
  /** performance.now() of the site's process when the request was stamped, ms. */
  at: number;
  /** How late this arrival may have been stamped: the site's own stall before it, ms. */
  lag: number;
}

/** The clock a site stamps arrivals with; stop() ends its ticking. */
export interface StampClock {
  stamp(): { at: number; lag: number };
  stop(): void;
}

export function stampClock(): StampClock {
  let lastTick = performance.now();
  let prevTick = lastTick;
  const ticker = setInterval(() => {
    prevTick = lastTick;
    lastTick = performance.now();
  }, 1);
  return {
    stamp: () => {
      const at = performance.now();
      return { at, lag: Math.max(0, at - prevTick - 2) };
    },
    stop: () => clearInterval(ticker),
  };
}

/**
 * This process's stalls while a test runs: a timer ticks every 5 ms, and
 * each tick later than `overMs` past the one before records the excess
 * (ms). What lets a pace bound excuse a slot the machine took, not the code.
 */
export function stallWatch(overMs: number): { stalls: number[]; stop(): void } {
  const stalls: number[] = [];
  let last = performance.now();
  const ticker = setInterval(() => {
    const now = performance.now();
    if (now - last - 5 > overMs) stalls.push(now - last - 5);
    last = now;
  }, 5);
  return { stalls, stop: () => clearInterval(ticker) };
}

/** A log of arrivals and the function that stamps one (for a site process). */
export function arrivalLog(): { log: Arrival[]; stamp: (path: string) => void } {
  const log: Arrival[] = [];
  const clock = stampClock();
  return { log, stamp: (path) => log.push({ path, ...clock.stamp() }) };
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
