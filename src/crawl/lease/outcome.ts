import type { PageRecord } from '../output/index.js';
import type { Tallies } from '../counters/index.js';

/**
 * What handling a lease decided. Deciding returns one of these; settle
 * (settle.ts) carries it out: the queue call, the page budget, the counters
 * and the output line. Nothing else ends a lease.
 */
export type Outcome =
  /** Done: commit. `page` when it was a fetch to a final response (it keeps its page reservation). */
  | { kind: 'commit'; page: boolean; record: Partial<PageRecord>; tallies: Tallies }
  /** Try again after `delayMs`; `countAttempt` false for pacing (no fault of the URL's). */
  | { kind: 'retry'; delayMs: number; countAttempt: boolean; reason: string; record?: Partial<PageRecord>; tallies: Tallies; item?: string }
  /** Hand the lease back unused (shutdown, a missed slot, waiting for robots.txt): the URL goes to the head of its queue. */
  | { kind: 'release'; tallies: Tallies }
  /** Never going to work: straight to the dead letter. */
  | { kind: 'fail'; reason: string; record: Partial<PageRecord>; tallies: Tallies }
  /**
   * The server asked the whole domain to slow down: pause it, then retry the
   * URL after the pause, no attempt counted; `item` (the URL with its pacing
   * count raised) is what goes back.
   */
  | { kind: 'pause'; ms: number; reason: string; tallies: Tallies; item?: string }
  /** Done, and due again in `delayMs` (seed revisit): `item` carries what this visit found; a page, kept like a commit's. */
  | { kind: 'revisit'; delayMs: number; item: string; record: Partial<PageRecord>; tallies: Tallies }
  /** The URL was queued again elsewhere (its host's server changed: servers/router.ts): commit, no output line. */
  | { kind: 'moved'; tallies: Tallies };

export const commit = (record: Partial<PageRecord>, tallies: Tallies = [], page = false): Outcome => ({ kind: 'commit', page, record, tallies });
export const release = (tallies: Tallies = []): Outcome => ({ kind: 'release', tallies });
export const fail = (reason: string, record: Partial<PageRecord> = {}, tallies: Tallies = []): Outcome => ({
  kind: 'fail',
  reason,
  record: { status: null, ...record, error: record.error ?? reason },
  tallies,
});
