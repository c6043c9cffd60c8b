import { ROBOTS, type RobotsCache, type RobotsEntry } from './cache.js';

/** What robots.txt says of one URL right now. */
export type RobotsVerdict =
  | { kind: 'allow' }
  | { kind: 'disallow' }
  /** Not known yet (or due for a retry): this lane fetches it now, in its URL's slot; `failures` so far. */
  | { kind: 'fetch'; failures: number }
  /** Another lane or worker is fetching it: hand the URL back (its domain is paused meanwhile). */
  | { kind: 'wait' }
  /** Unavailable for now (5xx or unreachable): try the URL again in `ms`. */
  | { kind: 'later'; ms: number; reason: string }
  /** Unavailable after ROBOTS.maxFailures tries: the URL is given up on. */
  | { kind: 'unavailable'; reason: string };

/**
 * The verdict for a URL from what is known of its origin's robots.txt.
 * `null` entry: never fetched. Pure: the lock is taken by the caller when
 * the verdict is 'fetch'.
 */
export function robotsVerdict(entry: RobotsEntry | null, pathAndQuery: string, now: number): RobotsVerdict {
  if (!entry) return { kind: 'fetch', failures: 0 };
  const s = entry.state;
  if (s.state === 'error') {
    if (s.failures >= ROBOTS.maxFailures) return { kind: 'unavailable', reason: `robots.txt unavailable: ${s.reason}` };
    if (s.retryAt <= now) return { kind: 'fetch', failures: s.failures };
    return { kind: 'later', ms: Math.max(100, s.retryAt - now), reason: 'robots.txt unavailable for now' };
  }
  if (entry.matcher && !entry.matcher.isAllowed(pathAndQuery)) return { kind: 'disallow' };
  return { kind: 'allow' };
}

/**
 * robots.txt in front of every URL, per origin: cached (allow/disallow),
 * fetch it now (one lane in the whole crawl holds the origin's lock), or
 * wait for the lane that does.
 */
export class RobotsGate {
  constructor(
    private readonly cache: RobotsCache,
    private readonly owner: string,
    private readonly now: () => number = Date.now,
  ) {}

  async check(url: URL): Promise<RobotsVerdict> {
    const v = robotsVerdict(await this.cache.get(url.origin), url.pathname + url.search, this.now());
    if (v.kind !== 'fetch') return v;
    return (await this.cache.lock(url.origin, this.owner)) ? v : { kind: 'wait' };
  }

  /** Keeps this worker's lock of a fetch a 'fetch' verdict asked for, while it runs. */
  async renew(origin: string): Promise<boolean> {
    return this.cache.renewLock(origin, this.owner);
  }

  /** The fetch a 'fetch' verdict asked for is over (its result stored): others may fetch again. */
  async done(origin: string): Promise<void> {
    await this.cache.unlock(origin, this.owner);
  }
}
