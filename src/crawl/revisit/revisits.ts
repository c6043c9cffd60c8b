import type { Tallies } from '../counters/index.js';
import { commit, type Outcome, type PageBudget } from '../lease/index.js';
import type { PageRecord, RevisitOf } from '../output/index.js';
import type { RevisitPolicy } from '../seed/index.js';
import { encodeItem, type QueuedUrl } from '../store/index.js';
import { conditionalHeaders, nextVisit, type VisitOutcome, type VisitResponse } from './schedule.js';

/**
 * Revisits (seed revisit): each page's visit ends in the lease's revisit
 * (FairQueue.revisit: done now, back at its queue's tail when due, through
 * the same rate slots as new URLs) with its record in its item, unless the
 * URL is not kept: past maxUrls (each URL takes a place on its first visit,
 * counted across every worker; a place is given back when its URL is
 * dropped), gone too long, or not there on its first visit.
 */
export class Revisits {
  constructor(
    private readonly policy: RevisitPolicy,
    private readonly places: PageBudget,
  ) {}

  /** Headers for a visit: conditional on what the last one got. */
  headersFor(item: QueuedUrl): Record<string, string> {
    return conditionalHeaders(item.visit);
  }

  /** The capture a 304 to this visit would confirm: the URL's last payload, archived when it was fetched. */
  revisitOf(item: QueuedUrl): RevisitOf | undefined {
    const at = item.visit?.capturedAt;
    return at === null || at === undefined ? undefined : { uri: item.url, date: new Date(at), payloadDigest: item.visit?.warcDigest ?? undefined };
  }

  /** What this visit found (its digest taken from the body, when read). */
  observe(item: QueuedUrl, res: VisitResponse): VisitOutcome {
    return nextVisit(item.visit, res, this.policy);
  }

  /** The outcome that ends the visit's lease: a revisit, or a commit when the URL is not kept. */
  async outcome(item: QueuedUrl, visit: VisitOutcome, record: Partial<PageRecord>, tallies: Tallies): Promise<Outcome> {
    const again = item.visit !== null;
    const t: Tallies = [...tallies];
    if (again) {
      t.push(['revisits', 1]);
      if (visit.notModified) t.push(['revisitsNotModified', 1]);
      else if (visit.changed === true) t.push(['revisitsChanged', 1]);
      else if (visit.changed === false) t.push(['revisitsUnchanged', 1]);
    }
    const line = (nextMs: number | null): Partial<PageRecord> => ({
      ...record,
      revisit: { visit: visit.record.visits, changed: visit.changed, notModified: visit.notModified, nextVisitSeconds: nextMs === null ? null : nextMs / 1000 },
    });
    if (visit.nextMs === null) {
      if (again) {
        await this.places.unreserve();
        t.push(['revisitsGone', 1]);
      }
      return commit(line(null), t, true);
    }
    if (!again && !(await this.places.reserve())) return commit(line(null), [...t, ['revisitsCapDrops', 1]], true);
    const next = encodeItem({ ...item, paced: 0, visit: visit.record });
    return { kind: 'revisit', delayMs: visit.nextMs, item: next, record: line(visit.nextMs), tallies: t };
  }
}
