import type { Logger } from 'pino';
import { EXIT } from './exit.js';

export interface Signals {
  signal: AbortSignal;
  /** 130 or 143 once a signal came, else null. */
  exitCode: () => number | null;
}

/** First SIGINT/SIGTERM: stop and hand leases back. Second: exit at once (leases expire and come back). */
export function trapSignals(log: Logger): Signals {
  const ac = new AbortController();
  let code: number | null = null;
  const on = (sig: 'SIGINT' | 'SIGTERM', exit: number) =>
    process.on(sig, () => {
      if (code !== null) process.exit(exit);
      code = exit;
      log.info({ signal: sig }, 'stopping: handing leases back (signal again to exit at once)');
      ac.abort();
    });
  on('SIGINT', EXIT.sigint);
  on('SIGTERM', EXIT.sigterm);
  return { signal: ac.signal, exitCode: () => code };
}
