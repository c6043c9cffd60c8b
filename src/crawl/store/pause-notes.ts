import type { CrawlKeys } from './keys.js';
import type { RedisClient } from '../../queue/index.js';

/** Why the crawler paused a domain (a pause the queue alone can't explain). */
export type PauseReason = 'retry-after' | 'robots';

export interface PauseNote {
  why: PauseReason;
  /** End of the pause, ms (Redis clock). */
  until: number;
}

/**
 * One field per domain, overwritten by its latest pause (so bounded by the
 * number of domains): lets `status` tell a Retry-After pause or a robots.txt
 * wait from a pause that only keeps the rate. Best effort: a lost note only
 * makes status say "rate".
 */
export class PauseNotes {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Pick<CrawlKeys, 'pauses'>,
  ) {}

  note(domain: string, why: PauseReason, until: number): void {
    void this.redis.hset(this.keys.pauses, domain, JSON.stringify({ why, until: Math.round(until) })).catch(() => undefined);
  }
}

export async function readPauseNotes(redis: RedisClient, keys: Pick<CrawlKeys, 'pauses'>, domains?: readonly string[]): Promise<Map<string, PauseNote>> {
  // (Those of the domains asked about, when given: an arena of 10^6 domains is not read whole.)
  const all: [string, string | null][] = domains
    ? domains.length === 0
      ? []
      : (await redis.hmget(keys.pauses, ...domains)).map((text, i) => [domains[i] as string, text])
    : Object.entries(await redis.hgetall(keys.pauses));
  const notes = new Map<string, PauseNote>();
  for (const [domain, text] of all) {
    if (text === null) continue;
    try {
      const v = JSON.parse(text) as Partial<PauseNote>;
      if ((v.why === 'retry-after' || v.why === 'robots') && typeof v.until === 'number') notes.set(domain, { why: v.why, until: v.until });
    } catch {
      // Not ours: ignored.
    }
  }
  return notes;
}
