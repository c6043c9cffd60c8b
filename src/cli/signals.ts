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

const EXIT_OF = { SIGINT: EXIT.sigint, SIGTERM: EXIT.sigterm } as const;
type Sig = keyof typeof EXIT_OF;

/** `handler` on SIGINT and SIGTERM; returns what removes it. */
function onSignals(handler: (sig: Sig) => void): () => void {
  const handlers = (Object.keys(EXIT_OF) as Sig[]).map((sig) => [sig, () => handler(sig)] as const);
  for (const [sig, h] of handlers) process.on(sig, h);
  return () => handlers.forEach(([sig, h]) => process.off(sig, h));
}

/** First SIGINT/SIGTERM: stop and hand leases back. Second: exit at once (leases expire and come back). */
export function trapSignals(log: Logger): Signals {
  const ac = new AbortController();
  let code: number | null = null;
  const release = onSignals((sig) => {
    if (code !== null) process.exit(EXIT_OF[sig]);
    code = EXIT_OF[sig];
    log.info({ signal: sig }, 'stopping: handing leases back (signal again to exit at once)');
    ac.abort();
  });
  return { signal: ac.signal, exitCode: () => code, release };
}

/** Passes SIGINT/SIGTERM on to `children`; `stopping()` says whether one came. release() removes the handlers. */
export function forwardSignals(children: readonly ChildProcess[]): { stopping: () => boolean; release: () => void } {
  let stopping = false;
  const release = onSignals((sig) => {
    stopping = true;
    for (const c of children) c.kill(sig);
  });
  return { stopping: () => stopping, release };
}
