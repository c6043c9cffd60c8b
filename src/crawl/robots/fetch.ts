import type { Logger } from 'pino';
import { LIMITS, type FairQueue, type RedisClient } from '../../queue/index.js';
import { isWeirError } from '../../errors.js';
import { FetchError, type Fetcher, type FetchResult, type SendGate } from '../fetch/index.js';
import type { CrawlKeys } from '../store/index.js';
import { normalizeUrl } from '../urls/index.js';
import { ROBOTS, robotsRetryMs, type RobotsCache, type RobotsState } from './cache.js';
import { parseRobots, robotsText } from './parse.js';
import type { Scope } from '../links/index.js';
import type { Seed } from '../seed/index.js';
import { isServerQueue, serverAddress } from '../servers/index.js';

/** The send gate of robots.txt's hop `hop` (0: the request itself; more: its redirects), resolved when that hop may go. */
export type HopGates = (hop: number, signal: AbortSignal) => Promise<SendGate | undefined>;

export interface RobotsFetchResult {
  state: RobotsState;
  /** Crawl-delay in seconds (capped) when the rules set one, else null. */
  crawlDelay: number | null;
  /** Its `Sitemap:` lines. */
  sitemaps: string[];
}

/**
 * Fetches an origin's robots.txt (redirects followed inline, RFC 9309
 * §2.3.1.2), stores what it says for every worker, and lowers the domain's
 * rate by its Crawl-delay.
 */
export class RobotsFetcher {
  constructor(
    private readonly deps: {
      redis: RedisClient;
      queue: FairQueue;
      cache: RobotsCache;
      fetcher: Fetcher;
      keys: CrawlKeys;
      seed: Seed;
      scope: Scope;
      log?: Logger | undefined;
      retryBaseMs?: number | undefined;
    },
  ) {}

  private failed(failures: number, reason: string): RobotsState {
    return { state: 'error', failures, retryAt: Date.now() + robotsRetryMs(failures, this.deps.retryBaseMs), reason };
  }

  /**
   * Fetches and stores. `gateOf` gives each hop's send gate (waiting first,
   * as a hop after the first must: each is a request to the site); the
   * first hop's decides, as its headers are written, whether it still goes.
   */
  async fetch(origin: string, domain: string, failures: number, signal: AbortSignal, gateOf?: HopGates): Promise<RobotsFetchResult> {
    const state = await this.get(origin, serverAddress(domain), failures, signal, gateOf);
    await this.deps.cache.set(origin, state);
    this.deps.log?.info({ origin, robots: state.state, ...(state.state === 'error' ? { reason: state.reason, failures: state.failures } : {}) }, 'robots.txt');
    const delay = state.state === 'rules' && state.rules.crawlDelay !== null && state.rules.crawlDelay > 0 ? Math.min(ROBOTS.maxCrawlDelaySeconds, state.rules.crawlDelay) : null;
    // (An answer without one withdraws a delay the origin asked before; an error says nothing.)
    if (delay !== null || state.state !== 'error') await this.applyCrawlDelay(origin, domain, delay);
    return { state, crawlDelay: delay, sitemaps: state.state === 'rules' ? (state.rules.sitemaps ?? []) : [] };
  }

  /** `address`: the server robots.txt is asked of (perServer), for hops on the origin's own host. */
  private async get(origin: string, address: string | undefined, failures: number, signal: AbortSignal, gateOf?: HopGates): Promise<RobotsState> {
    let url = `${origin}/robots.txt`;
    const host = new URL(origin).hostname;
    for (let hop = 0; hop <= ROBOTS.maxRedirects; hop++) {
      let res: FetchResult;
      try {
        const gate = await gateOf?.(hop, signal);
        if (signal.aborted) throw new FetchError('WEIR_NETWORK', 'stopped before robots.txt was sent', 0);
        res = await this.deps.fetcher.fetch(url, { wantBody: () => true, signal, gate, address: new URL(url).hostname === host ? address : undefined });
      } catch (err) {
        // The archive failed: nothing is learnt of the site (the worker stops: worker.ts).
        if (isWeirError(err, 'WEIR_WARC')) throw err;
        const e = FetchError.from(err, 0);
        // Not sent (too late for its slot, or stopped): nothing was learnt; the caller hands its lease back.
        if (e.code === 'WEIR_LATE' || signal.aborted) throw e;
        // A refused address will be refused again: no point in retrying.
        return this.failed(e.code === 'WEIR_PRIVATE_ADDRESS' ? ROBOTS.maxFailures : failures + 1, `${e.code}: ${e.message}`);
      }
      const loc = res.headers.location;
      if (res.status >= 300 && res.status < 400 && loc !== undefined) {
        const next = normalizeUrl(Array.isArray(loc) ? (loc[0] ?? '') : loc, url);
        if (!next) break;
        url = next;
        continue;
      }
      if (res.status >= 200 && res.status < 300) {
        const rules = parseRobots(robotsText(res.body ?? Buffer.alloc(0)), this.deps.seed.productToken);
        return { state: 'rules', rules, fetchedAt: Date.now() };
      }
      if (res.status >= 400 && res.status < 500) return { state: 'allow-all', status: res.status, fetchedAt: Date.now() };
      return this.failed(failures + 1, `HTTP ${res.status}`);
    }
    // Too many redirects: treated as unreachable (RFC 9309 §2.3.1.2 allows either).
    return this.failed(failures + 1, 'too many redirects');
  }

  /**
   * Crawl-delay lowers a domain's rate, never raises it; the largest delay
   * of the domain's origins wins: each origin's delay is a floor its queue
   * keeps (setLimits' `floor`, by origin: exact however workers race, and
   * kept when a second kickoff sets the seed's limits again). `delaySeconds`
   * null: robots.txt no longer asks for one, and the origin's floor, if it
   * had one, is withdrawn. `domain` is the queue the robots.txt was fetched
   * for: with perServer, a server's, which takes the lower rate as any of
   * its sites' limits (setLimits lower: the strictest stands, never lifted).
   */
  private async applyCrawlDelay(origin: string, domain: string, delaySeconds: number | null): Promise<void> {
    const { redis, keys, seed, scope, queue } = this.deps;
    if (delaySeconds === null) {
      // (Most origins never asked: one HDEL says so.)
      if ((await redis.hdel(keys.crawlDelays, origin)) === 0 || isServerQueue(domain)) return;
    } else {
      await redis.hset(keys.crawlDelays, origin, String(delaySeconds));
    }
    if (isServerQueue(domain)) {
      const own = await scope.limitsOf((await scope.queueOf(`${origin}/`)) ?? '');
      if (own === null || delaySeconds === null) return;
      const byDelay = Math.min(LIMITS.maxRate, 1 / delaySeconds);
      const rate = own.rate === 'unlimited' ? byDelay : Math.min(own.rate, byDelay);
      await queue.setLimits(seed.arena, { [domain]: { rate, maxInFlight: own.maxInFlight } }, { lower: true });
      this.deps.log?.info({ domain, origin, crawlDelay: delaySeconds }, 'Crawl-delay applied to its server');
      return;
    }
    const configured = await scope.limitsOf(domain);
    if (configured === null) return;
    await queue.setLimits(seed.arena, { [domain]: configured }, { floor: { source: origin, ms: 1000 * (delaySeconds ?? 0) } });
    this.deps.log?.info({ domain, origin, crawlDelay: delaySeconds }, delaySeconds === null ? 'Crawl-delay withdrawn' : 'Crawl-delay applied');
  }
}
