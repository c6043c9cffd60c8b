import { type CrawlKeys, ownedLock } from '../store/index.js';
import { RobotsMatcher, type RobotsRules } from './parse.js';
import type { RedisClient } from '../../queue/index.js';

/** Documented robots.txt behaviour. */
export const ROBOTS = {
  /** How long a fetched robots.txt is trusted (RFC 9309 asks for at most 24 h). */
  ttlSeconds: 24 * 60 * 60,
  /** Failed fetches (5xx or unreachable) before the origin's URLs are dead-lettered. */
  maxFailures: 5,
  /** Backoff after the nth failure: base × 2^(n-1), capped. */
  retryBaseMs: 1000,
  retryMaxMs: 60_000,
  /** Crawl-delay values above this are read as this (so one line can't stall a domain for hours). */
  maxCrawlDelaySeconds: 60,
  /**
   * An origin's robots.txt fetch lock, and its domain's pause meanwhile,
   * last this long unless renewed (every third of it while the fetch runs):
   * a worker that dies mid-fetch holds the domain up no longer than this.
   */
  lockMs: 5_000,
  /** Redirect hops followed inline for robots.txt itself (RFC 9309 §2.3.1.2: at least five). */
  maxRedirects: 5,
} as const;

/** What weir knows of an origin's robots.txt. */
export type RobotsState =
  | { state: 'rules'; rules: RobotsRules; fetchedAt: number }
  /** 4xx, or no robots.txt: everything allowed. */
  | { state: 'allow-all'; status: number; fetchedAt: number }
  /** 5xx or unreachable: everything disallowed until retryAt. */
  | { state: 'error'; failures: number; retryAt: number; reason: string };

export interface RobotsEntry {
  state: RobotsState;
  matcher: RobotsMatcher | null;
}

/**
 * robots.txt per origin, shared by all workers through Redis (24 h TTL) and
 * memoised in the worker for a minute, so most URLs cost no lookup at all.
 */
export class RobotsCache {
  private readonly local = new Map<string, { entry: RobotsEntry; until: number }>();

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: CrawlKeys,
  ) {}

  async get(origin: string): Promise<RobotsEntry | null> {
    const hit = this.local.get(origin);
    if (hit && hit.until > Date.now()) return hit.entry;
    const raw = await this.redis.get(this.keys.robots(origin));
    if (!raw) return null;
    const entry = toEntry(JSON.parse(raw) as RobotsState);
    // Errors are re-read each time: another worker may have fetched it since.
    if (entry.state.state !== 'error') this.local.set(origin, { entry, until: Date.now() + 60_000 });
    return entry;
  }

  async set(origin: string, state: RobotsState): Promise<RobotsEntry> {
    await this.redis.set(this.keys.robots(origin), JSON.stringify(state), 'EX', ROBOTS.ttlSeconds);
    const entry = toEntry(state);
    this.local.delete(origin);
    return entry;
  }

  /** One worker fetches an origin's robots.txt at a time (the lock: store/owned-lock.ts). */
  async lock(origin: string, token: string): Promise<boolean> {
    return ownedLock.take(this.redis, this.keys.robotsLock(origin), token, ROBOTS.lockMs);
  }

  /** Keeps the lock while its fetch runs; false when it was lost (expired, and taken by another). */
  async renewLock(origin: string, token: string): Promise<boolean> {
    return ownedLock.renew(this.redis, this.keys.robotsLock(origin), token, ROBOTS.lockMs);
  }

  /** Frees the lock if `token` still holds it (never another worker's). */
  async unlock(origin: string, token: string): Promise<void> {
    await ownedLock.release(this.redis, this.keys.robotsLock(origin), token);
  }
}

function toEntry(state: RobotsState): RobotsEntry {
  return { state, matcher: state.state === 'rules' ? new RobotsMatcher(state.rules) : null };
}

/** Backoff before retrying robots.txt after `failures` failures. */
export function robotsRetryMs(failures: number, baseMs: number = ROBOTS.retryBaseMs): number {
  return Math.min(ROBOTS.retryMaxMs, baseMs * 2 ** Math.max(0, failures - 1));
}
