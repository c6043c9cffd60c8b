import { addFields, type FieldAdds } from './add-fields.js';
import type { HistoryWriter } from './history.js';
import type { CrawlMetrics } from './metrics.js';
import { TALLY_NAMES, tallyField, type Tallies, type TallyName } from './names.js';
import type { RedisClient } from '../../queue/index.js';

export { TALLY_NAMES, tallyField, type TallyName, type Tallies } from './names.js';

/** The tallies a domain's failed URLs are counted in (status: 'failed'). */
const ERROR_TALLIES = new Set<TallyName>(['errors', '4xx']);

/** A worker's counts: added up locally and in its metrics as they come, written to Redis in batches (flush). */
export class Tally {
  private pending = new Map<string, number>();
  /** Failed URLs per domain since the last flush, for the errors index (CrawlKeys.errorDomains). */
  private errors = new Map<string, number>();
  /** This process's totals, for its summary. */
  readonly local = Object.fromEntries(TALLY_NAMES.map((n) => [n, 0])) as Record<TallyName, number>;

  constructor(
    private readonly metrics?: CrawlMetrics,
    /** Recent requests per domain for the status page, written with each flush. */
    private readonly history?: HistoryWriter,
  ) {}

  add(domain: string, name: TallyName, n = 1): void {
    if (n === 0) return;
    for (const field of [tallyField(domain, name), tallyField('*', name)]) this.pending.set(field, (this.pending.get(field) ?? 0) + n);
    if (ERROR_TALLIES.has(name) && domain !== '*') this.errors.set(domain, (this.errors.get(domain) ?? 0) + n);
    this.local[name] += n;
    this.metrics?.count(name, n);
    this.history?.count(domain, name, n);
  }

  addAll(domain: string, tallies: Tallies): void {
    for (const [name, n] of tallies) this.add(domain, name, n);
  }

  /**
   * Writes what was counted since the last flush, the history buckets and
   * this worker's heartbeat: one pipeline, the counts in one script call.
   */
  async flush(redis: RedisClient, key: string, errorsKey?: string): Promise<void> {
    if (this.pending.size === 0 && !this.history) return;
    const adds: FieldAdds = new Map([[key, this.pending]]);
    this.pending = new Map();
    const p = redis.pipeline();
    if (errorsKey) for (const [domain, n] of this.errors) p.zincrby(errorsKey, n, domain);
    this.errors = new Map();
    const expiries = this.history?.takeCounts(adds) ?? [];
    addFields(p, adds);
    this.history?.heartbeat(p, expiries);
    await p.exec();
  }
}

/** Beside the counters: when the crawl started, by Redis's clock (ms), written once by kickoff. */
export const STARTED_AT_FIELD = '*:startedAt';
