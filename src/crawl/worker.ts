import { randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import type { Logger } from 'pino';
import { FairQueue, type Lease, type LeaseOutcome, type RedisClient } from '../queue/index.js';
import { isWeirError, type WeirError } from '../errors.js';
import { sleep } from '../sleep.js';
import { HistoryWriter, Tally } from './counters/index.js';
import { LocalSeen } from './dedupe/index.js';
import { EndWatch } from './end-watch.js';
import { Fetcher, guardedLookup } from './fetch/index.js';
import { commit, DomainQuota, fail, PACING, PageBudget, PauseBroadcast, realClock, release, SendPacer, Settler, SitePace, type LeaseContext, type Outcome } from './lease/index.js';
import { DomainList, LinkFollower, Scope } from './links/index.js';
import { WarcWriter } from './output/index.js';
import { fetchRobotsInSlot, RobotsCache, RobotsFetcher, RobotsGate, type RobotsSlotDeps } from './robots/index.js';
import { hasDomainList, type Seed } from './seed/index.js';
import { crawlKeys, decodeItem, DomainClaims, noteFault, PauseNotes, type CrawlKeys, type QueuedUrl } from './store/index.js';
import { AddressBook, isServerQueue, ServerRouter } from './servers/index.js';
import { Revisits } from './revisit/index.js';
import { UrlFetch } from './url-fetch.js';
import { WORKER_DEFAULTS, type WorkerOptions, type WorkerSummary } from './worker-options.js';

export { WORKER_DEFAULTS };
export type { OnPage, PageContext, WorkerOptions, WorkerSummary } from './worker-options.js';

/** How long a URL waits when its domain's maxPagesPerDomain is reserved by pages still in flight (one may end in none). */
const QUOTA_RECHECK_MS = 2000;

/** A lease and what handling it decided, not yet carried out. */
interface Decided {
  ctx: LeaseContext;
  outcome: Outcome;
}

/**
 * One crawl worker: `concurrency` lanes, each taking a URL lease, deciding
 * what becomes of it (robots.txt, fetch, links) and settling it. Any number
 * of these, in any number of processes, share one arena.
 */
export class CrawlWorker {
  private readonly queue: FairQueue;
  private readonly keys: CrawlKeys;
  private readonly fetcher: Fetcher;
  private readonly tally: Tally;
  private readonly budget: PageBudget;
  private readonly quota: DomainQuota;
  private readonly pacer: SendPacer;
  private readonly pauseBroadcast: PauseBroadcast;
  private readonly gate: RobotsGate;
  private readonly robotsSlot: RobotsSlotDeps;
  private readonly fetch: UrlFetch;
  private readonly links: LinkFollower;
  private readonly settler: Settler;
  private readonly archive: WarcWriter | undefined;
  private readonly pauses: PauseNotes;
  private readonly scope: Scope;
  /** With perServer: which server's queue each URL goes to. */
  private readonly servers: ServerRouter | undefined;
  private readonly stop = new AbortController();
  private readonly fetchAbort = new AbortController();
  private exitReason: WorkerSummary['exitReason'] = 'stopped';
  /** Made by run(). */
  private endWatch: EndWatch | null = null;
  /** Leases taken and not yet settled, over all lanes (at 0 the end may have come: endWatch checks). */
  private held = 0;

  constructor(
    private readonly redis: RedisClient,
    private readonly seed: Seed,
    private readonly options: WorkerOptions = {},
  ) {
    const log = options.logger;
    const lanes = options.concurrency ?? WORKER_DEFAULTS.concurrency;
    this.queue = new FairQueue(redis, {
      leaseMs: options.leaseMs ?? WORKER_DEFAULTS.leaseMs,
      lingerMs: options.lingerMs ?? WORKER_DEFAULTS.lingerMs,
      spareLeases: Math.min(options.spareLeases ?? WORKER_DEFAULTS.spareLeases, Math.max(0, lanes - 1)),
      replylessReports: options.replylessReports ?? true,
    });
    this.keys = crawlKeys(seed.arena, this.queue);
    const localSeen = new LocalSeen(seed.bloom.expectedUrls);
    const history = new HistoryWriter(this.keys, () => this.queue.clock.toRedis(performance.now()), () => localSeen.falsePositiveRate);
    this.tally = new Tally(options.metrics, history);
    this.budget = new PageBudget(redis, this.keys.pages, seed.maxPages);
    // A full domain's queued URLs are dropped at once (each would take a rate slot only to be skipped).
    this.quota = new DomainQuota(redis, this.keys.domainPages, seed.maxPagesPerDomain, (domain) => {
      this.queue.purge(seed.arena, domain).then(
        (n) => this.tally.add(domain, 'quotaSkips', n),
        (err: unknown) => this.log?.warn({ err, domain }, 'dropping the queued URLs of a domain at its maxPagesPerDomain failed: they are skipped as they come'),
      );
    });
    this.archive = options.warc ? new WarcWriter({ ...options.warc, arena: seed.arena, userAgent: seed.userAgent }) : undefined;
    const scope = new Scope(seed, hasDomainList(seed) ? new DomainList(redis, this.keys.domainList) : null);
    this.scope = scope;
    const lookup = options.lookup ?? guardedLookup(seed.allowPrivateNetworks);
    const book = seed.perServer ? new AddressBook(redis, this.keys.addresses, lookup, options.addressTtlMs) : undefined;
    this.servers = book && new ServerRouter(book, scope);
    this.fetcher = new Fetcher({
      archive: this.archive,
      userAgent: seed.userAgent,
      timeoutMs: seed.requestTimeoutMs,
      maxBodyBytes: seed.maxBodyBytes,
      allowPrivateNetworks: seed.allowPrivateNetworks,
      lookup,
    });
    this.pauses = new PauseNotes(redis, this.keys);
    const cache = new RobotsCache(redis, this.keys);
    // (At debug, each write: when it was held to and when it went, epoch ms.)
    const epoch = (localMs: number): number => Math.round((performance.timeOrigin + localMs) * 1000) / 1000;
    const traceWrite = log?.isLevelEnabled('debug') ? (lease: Lease, plannedAt: number, wroteAt: number) => log.debug({ url: decodeItem(lease.item)?.url, queue: lease.queue, slotAt: epoch(plannedAt), wroteAt: epoch(wroteAt) }, 'request written') : undefined;
    this.pacer = new SendPacer(this.queue, this.sendWindowMs, (domain, name) => this.tally.add(domain, name), realClock, seed.sendMarginMs, traceWrite);
    this.gate = new RobotsGate(cache, randomBytes(6).toString('hex'));
    const robots = new RobotsFetcher({ redis, queue: this.queue, cache, fetcher: this.fetcher, keys: this.keys, seed, scope, log, retryBaseMs: options.robotsRetryBaseMs });
    const claims = seed.otherDomains && new DomainClaims(redis, this.keys.otherDomains, seed.otherDomains.maxDomains);
    this.links = new LinkFollower(this.queue, seed, scope, localSeen, new PageBudget(redis, this.keys.sitemapBudget, seed.maxSitemaps), claims, this.quota, this.servers, options.onPage);
    this.robotsSlot = { queue: this.queue, pacer: this.pacer, gate: this.gate, robots, fetcher: this.fetcher, pauses: this.pauses, links: this.links, seed };
    const revisits = seed.revisit ? new Revisits(seed.revisit, new PageBudget(redis, this.keys.revisitUrls, seed.revisit.maxUrls)) : undefined;
    this.pauseBroadcast = new PauseBroadcast(redis, this.keys.pauseChannel, (queue, ms) => this.pacer.notePause(queue, ms));
    this.fetch = new UrlFetch({ revisits, pacer: this.pacer, pauseHeard: (queue, ms) => this.pauseBroadcast.tell(queue, ms), pace: new SitePace(this.queue, seed.arena, seed.adaptivePace, (domain, rate) => history.pace(domain, rate)), fetcher: this.fetcher, links: this.links, signal: this.fetchAbort.signal, tally: this.tally, metrics: options.metrics, maxBodyBytes: seed.maxBodyBytes, retryBaseMs: options.retryBaseMs, pacingFloorMs: options.pacingFloorMs });
    this.settler = new Settler({ queue: this.queue, budget: this.budget, quota: this.quota, tally: this.tally, out: options.out, metrics: options.metrics, log, archiving: this.archive !== undefined, pauses: this.pauses });
    // Every lane waits on these at once: concurrency can pass Node's default of 10 listeners.
    setMaxListeners(0, this.stop.signal, this.fetchAbort.signal);
    options.signal?.addEventListener('abort', () => this.halt('stopped'), { once: true });
  }

  /** The send window leases are taken with (within a lease: no request goes after its lease would have run out). */
  private get sendWindowMs(): number {
    return Math.min(PACING.sendWindowMs, this.queue.leaseMs);
  }

  private get log(): Logger | undefined {
    return this.options.logger;
  }

  /** This worker's counts so far. */
  summary(): WorkerSummary {
    const t = this.tally.local;
    return {
      pages: t.pages,
      errors: t.errors + t['4xx'],
      robotsBlocked: t.robots,
      redirects: t.redirects,
      enqueued: t.enqueued,
      malformedUrls: t.malformed,
      released: t.released,
      dequeues: this.queue.counters.dequeues,
      emptyDequeues: this.queue.counters.emptyDequeues,
      wakeups: this.queue.counters.wakeups,
      exitReason: this.exitReason,
    };
  }

  /** Stops dequeuing; fetches in flight finish or are handed back. */
  halt(reason: WorkerSummary['exitReason'], abortFetches = true): void {
    if (!this.stop.signal.aborted) this.exitReason = reason;
    this.stop.abort();
    if (abortFetches) this.fetchAbort.abort();
  }

  async run(): Promise<WorkerSummary> {
    const concurrency = this.options.concurrency ?? WORKER_DEFAULTS.concurrency;
    if (this.seed.requestTimeoutMs > this.queue.leaseMs) {
      this.log?.info(
        { requestTimeoutMs: this.seed.requestTimeoutMs, leaseMs: this.queue.leaseMs },
        `a request may take longer than a lease: each lease is renewed every ${Math.round(this.queue.leaseMs / 3)} ms while its URL is handled, so a live worker keeps it; a dead worker's URLs come back ${this.queue.leaseMs} ms after its last renewal`,
      );
    }
    const flush = (): Promise<void> => this.tally.flush(this.redis, this.keys.stats, this.keys.errorDomains).catch(() => undefined);
    const flusher = setInterval(() => void flush(), 1000);
    this.endWatch = new EndWatch({
      budget: this.budget,
      drained: this.options.exitWhenDone ? async () => (await this.queue.stats(this.seed.arena)).drained : null,
      halt: (reason) => this.halt(reason, false),
      signal: this.stop.signal,
      log: this.log,
    });
    const watch = this.endWatch.run();
    await this.fetcher.warmUp();
    // (Not awaited: Redis may be away at start, and not listening only costs
    // the other workers' Retry-Afters being heard late: logged, not fatal.)
    this.pauseBroadcast.listen().catch((err: unknown) => this.log?.warn({ err }, "listening for other workers' Retry-After pauses failed"));
    try {
      await Promise.all([...Array.from({ length: concurrency }, () => this.lane()), watch]);
    } finally {
      clearInterval(flusher);
      this.pauseBroadcast.close();
      await flush();
      await this.queue.close();
      await this.fetcher.close();
      await this.archive?.close();
    }
    return this.summary();
  }

  /**
   * One lane: take a lease, decide, settle; again until stopped. A lease
   * done with is committed in the same call that takes the next one (or,
   * when the next is a spare, on a later call: its settling then goes on
   * beside the next lease, finished before the lane settles another).
   */
  private async lane(): Promise<void> {
    let failures = 0;
    let done: Decided | null = null;
    let settling: Promise<null> = Promise.resolve(null);
    let settled = true;
    const options = { signal: this.stop.signal, aheadMs: PACING.aheadMs, sendWindowMs: this.sendWindowMs };
    while (!this.stop.signal.aborted) {
      let lease: Lease | null;
      const carried = done;
      done = null;
      try {
        if (carried) {
          // (A commit still on its way, its shard's master gone until a replica
          // takes over, say: the lease done with is kept meanwhile, not lost to
          // the wait and fetched again.)
          if (!settled) await this.renewing(carried.ctx.lease, settling);
          const { committed, next } = this.queue.commitAndTake(carried.ctx.lease, options);
          settled = false;
          settling = this.settle(carried, committed).finally(() => (settled = true));
          lease = await next;
        } else {
          lease = await this.queue.take(this.seed.arena, options);
        }
        failures = 0;
      } catch (err) {
        // Redis trouble the client could not ride out: log, back off (capped), try again.
        failures++;
        this.log?.warn({ err, failures }, 'dequeue failed; retrying');
        await sleep(Math.min(5000, 100 * 2 ** Math.min(failures, 6)), this.stop.signal);
        continue;
      }
      if (!lease) break;
      this.held++;
      this.options.metrics?.leases.inc({ outcome: 'taken' });
      const decided = await this.handle(lease);
      done = decided.outcome.kind === 'commit' ? decided : await this.settle(decided);
    }
    await settling;
    if (done) await this.settle(done);
  }

  /** Decides one lease; an unexpected error hands the lease back at once. */
  private async handle(lease: Lease): Promise<Decided> {
    const ctx: LeaseContext = { lease, item: decodeItem(lease.item), reserved: false };
    try {
      // The lease is renewed while it is handled (robots.txt, the fetch, its links).
      return { ctx, outcome: await this.renewing(lease, this.decide(ctx)) };
    } catch (err) {
      if (isWeirError(err, 'WEIR_WARC')) return { ctx, outcome: this.archiveFailed(err, ctx) };
      this.log?.error({ err, url: ctx.item?.url ?? lease.item }, 'processing a URL failed: handing its lease back');
      return { ctx, outcome: release([['internalErrors', 1]]) };
    } finally {
      // (Its request reported, or reported never sent: the domain's next slot waits for this.)
      this.pacer.finish(lease);
    }
  }

  /** `work`, with `lease` renewed meanwhile: three times a lease, so a late renewal still lands before the lease ends. */
  private async renewing<T>(lease: Lease, work: Promise<T>): Promise<T> {
    const renew = setInterval(() => void this.queue.extend(lease).catch(() => undefined), Math.max(5, this.queue.leaseMs / 3));
    try {
      return await work;
    } finally {
      clearInterval(renew);
    }
  }

  /**
   * An exchange could not be archived (a full disk, a spool that failed):
   * the worker's fault, not the site's. Its lease goes back with no attempt
   * counted (no URL is committed without its record, none fetched again in a
   * loop), and the worker stops: every lane hands its lease back, the fault
   * is noted for `status`, and the command exits non-zero.
   */
  private archiveFailed(err: WeirError, ctx: LeaseContext): Outcome {
    if (!this.stop.signal.aborted) {
      this.log?.error({ err, url: ctx.item?.url, warcDir: this.options.warc?.dir }, `archiving failed: ${err.message}. The worker stops (its leases go back, nothing is lost); free space in the WARC directory, then start it again`);
      void noteFault(this.redis, this.keys, err.code, err.message);
    }
    this.halt('archiveFailed');
    return release([['archiveFailures', 1]]);
  }

  /** Carries a decision out (a commit already sent: its answer); null, for the lane's loop. */
  private async settle(d: Decided, committed?: Promise<LeaseOutcome>): Promise<null> {
    try {
      await this.settler.settle(d.ctx, d.outcome, committed);
    } catch (err) {
      // Redis trouble mid-settle: the lease expires and the URL comes back.
      this.log?.error({ err, url: d.ctx.item?.url ?? d.ctx.lease.item }, 'settling a URL failed');
    }
    if (--this.held === 0) this.endWatch?.idle();
    return null;
  }

  private async decide(ctx: LeaseContext): Promise<Outcome> {
    const { lease, item } = ctx;
    if (!item) return fail('malformed queue item');
    if (this.fetchAbort.signal.aborted) return release();
    const moved = await this.relocated(lease, item);
    if (moved) return moved;
    // (A server's queue holds several domains: the URL's is its output line's, and its quota's.)
    if (isServerQueue(lease.queue)) ctx.domain = (await this.scope.queueOf(item.url)) ?? undefined;
    const url = new URL(item.url);
    const robots = await this.gate.check(url);
    switch (robots.kind) {
      case 'fetch':
        return fetchRobotsInSlot(this.robotsSlot, lease, url.origin, robots.failures, this.fetchAbort.signal);
      case 'wait':
        return release([['robotsWaits', 1]]);
      case 'later':
        return { kind: 'retry', delayMs: robots.ms, countAttempt: false, reason: robots.reason, tallies: [] };
      case 'unavailable':
        return fail(robots.reason, {}, [['errors', 1]]);
      case 'disallow':
        return commit({ status: null, error: 'disallowed by robots.txt' }, [['robots', 1]]);
      case 'allow':
        break;
    }
    // A sitemap is not a page: it takes a rate slot, not a page of maxPages.
    if (item.sitemapLevel !== null) return this.fetch.sitemap(lease, item);
    // A revisit is not a new page: maxPages and maxPagesPerDomain counted its first visit.
    if (item.visit !== null) return this.fetch.page(lease, item);
    if (!(await this.budget.reserve())) {
      this.log?.info('maxPages reached');
      this.halt('maxPages', false);
      return release();
    }
    ctx.reserved = true;
    const domain = ctx.domain ?? lease.queue;
    switch (await this.quota.reserve(domain)) {
      case 'ok':
        if (this.quota.limited) ctx.quotaDomain = domain;
        return this.fetch.page(lease, item);
      case 'wait':
        // (Its domain's pages in flight may yet end in none: asked again in a while.)
        return { kind: 'retry', delayMs: QUOTA_RECHECK_MS, countAttempt: false, reason: 'maxPagesPerDomain: waiting on pages in flight', tallies: [] };
      case 'full':
        return commit({ status: null, error: 'maxPagesPerDomain reached' }, [['quotaSkips', 1]]);
    }
  }

  /**
   * With perServer, a URL whose host resolves to another address now than
   * when it was queued goes to that server's queue (queued there before this
   * lease commits: at worst fetched twice, never lost), and nothing is sent
   * under the old server's pace.
   */
  private async relocated(lease: Lease, item: QueuedUrl): Promise<Outcome | null> {
    if (!this.servers || !isServerQueue(lease.queue)) return null;
    const now = await this.servers.queueOf(item.url);
    if (now === null || now === lease.queue) return null;
    const create = await this.servers.limitsOf((await this.scope.queueOf(item.url)) ?? lease.queue);
    await this.queue.enqueue(this.seed.arena, now, [lease.item], { ...(create ? { create, lower: true } : {}), front: true });
    this.log?.info({ url: item.url, from: lease.queue, to: now }, "host's address changed: URL queued for its new server");
    return { kind: 'moved', tallies: [['addressMoves', 1]] };
  }
}
