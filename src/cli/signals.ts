import type { ChildProcess } from 'node:child_process';
import type { Logger } from 'pino';
import { EXIT } from './exit.js';

export interface Signals {
  signal: AbortSignal;
  /** 130 or 143 once a signal came, else null. */
  exitCode: () => number | null;
  /** Removes the handlers (a command that returns leaves the process's signals as it found them). */
  release: () => void;
}

const SIGNALS = ['SIGINT', 'SIGTERM'] as const;
const EXIT_OF = { SIGINT: EXIT.sigint, SIGTERM: EXIT.sigterm } as const;

/** First SIGINT/SIGTERM: stop and hand leases back. Second: exit at once (leases expire and come back). */
export function trapSignals(log: Logger): Signals {
  const ac = new AbortController();
  let code: number | null = null;
  const handlers = SIGNALS.map((sig) => {
    const handler = (): void => {
      if (code !== null) process.exit(EXIT_OF[sig]);
      code = EXIT_OF[sig];
      log.info({ signal: sig }, 'stopping: handing leases back (signal again to exit at once)');
      ac.abort();
    };
    process.on(sig, handler);
    return [sig, handler] as const;
  });
  return { signal: ac.signal, exitCode: () => code, release: () => handlers.forEach(([sig, h]) => process.off(sig, h)) };
}

/** Passes SIGINT/SIGTERM on to `children`; `stopping()` says whether one came. release() removes the handlers. */
export function forwardSignals(children: readonly ChildProcess[]): { stopping: () => boolean; release: () => void } {
  let stopping = false;
  const handlers = SIGNALS.map((sig) => {
    const handler = (): void => {
      stopping = true;
      for (const c of children) c.kill(sig);
    };
    process.on(sig, handler);
    return [sig, handler] as const;
  });
  return { stopping: () => stopping, release: () => handlers.forEach(([sig, h]) => process.off(sig, h)) };
}
