import { randomBytes } from 'node:crypto';
import type { CheerioAPI } from 'cheerio';
import type { Cluster, Redis } from 'ioredis';
import type { Logger } from 'pino';
import { setMaxListeners } from 'node:events';
import { FairQueue, sleep, sleepUntil, type FairQueueOptions, type Lease, type LeaseOutcome, type RetryOptions, type TakeOptions } from '../queue/index.js';
import type { CrawlMetrics } from './metrics.js';
import { bloomParams, bloomPositions, type BloomParams } from './bloom.js';
import { decodeBody, FetchError, Fetcher, isHtml, type FetchResult } from './fetch.js';
import { crawlKeys, decodeItem, encodeItem, type CrawlItem, type CrawlKeys } from './keys.js';
import { extractLinksAsync, headerNofollow } from './links.js';
import type { LookupFunction } from './netguard.js';
import { normalizeToUrl, normalizeUrl } from './normalize.js';
import type { JsonlWriter, PageRecord } from './output.js';
import { ROBOTS, RobotsCache, robotsRetryMs, type RobotsState } from './robots-cache.js';
import { parseRobots, ROBOTS_MAX_BYTES } from './robots.js';
import { Scope } from './scope.js';
import type { Seed } from './seed.js';

/** Documented worker defaults. */
export const WORKER_DEFAULTS = {
  /** Fetches in flight at once in one worker process, across domains. */
  concurrency: 16,
  /** Lease per URL; extended every half lease while a fetch runs. */
  leaseMs: 60_000,
  /** Retry backoff for 5xx and network errors: base × 2^(attempt-1) × jitter(0.5–1.5), capped. */
  retryBaseMs: 1000,
  retryMaxMs: 10 * 60_000,
  /** Retry-After (429/503) is honoured up to this many seconds. */
  maxRetryAfterSeconds: 3600,
  /** A 429 without Retry-After pauses the domain this long. */
  default429Seconds: 30,
  /** How often an idle worker with exitWhenDone checks whether the arena is drained. */
  drainCheckMs: 500,
  /**
   * A slot's request is sent this long after Redis served the slot, and only
   * if it can go within sendSlackMs of that: so the gaps a server sees are
   * the gaps Redis decided, whatever each worker did in between (robots
   * lookup, an event loop busy parsing a big page). A slot missed by more is
   * handed back unused: politeness over throughput.
   */
  sendDelayMs: 10,
  sendSlackMs: 1,
} as const;

export interface PageContext {
  url: string;
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /** cheerio, loaded on first use. */
  $: () => Promise<CheerioAPI>;
}

/** Extra URLs to enqueue (absolute or relative to the page), or nothing. */
export type OnPage = (page: PageContext) => Promise<string[] | void> | string[] | void;

export interface WorkerOptions {
  concurrency?: number;
  leaseMs?: number;
  exitWhenDone?: boolean;
  out?: JsonlWriter;
  logger?: Logger;
  onPage?: OnPage;
  /** Aborting stops dequeuing; leases in flight are handed back. */
  signal?: AbortSignal;
  /** Injectable DNS (tests). */
  lookup?: LookupFunction;
  /** Backoff base after a failed robots.txt fetch (default ROBOTS.retryBaseMs, 1 s). */
  robotsRetryBaseMs?: number;
  /** Backoff base for 5xx and network errors (default WORKER_DEFAULTS.retryBaseMs, 1 s). */
  retryBaseMs?: number;
  /** A live progress line on stderr (pages/s, queued, leased, errors); the CLI turns it on for a terminal. */
  progress?: boolean;
  /** Prometheus metrics to keep (see CrawlMetrics). */
  metrics?: CrawlMetrics;
}

/** The queue, counting what becomes of each lease (for metrics). */
class CountingQueue extends FairQueue {
  constructor(
    client: Redis | Cluster,
    options: FairQueueOptions,
    private readonly count: (outcome: string) => void,
  ) {
    super(client, options);
  }

  override async take(arena: string, options?: TakeOptions): Promise<Lease | null> {
    const l = await super.take(arena, options);
    if (l) this.count('taken');
    return l;
  }

  override async commit(lease: Lease): Promise<LeaseOutcome> {
    const r = await super.commit(lease);
    this.count(r === 'ok' ? 'committed' : 'stale');
    return r;
  }

  override async retry(lease: Lease, options?: RetryOptions): Promise<LeaseOutcome | 'dead'> {
    const r = await super.retry(lease, options);
    this.count(r === 'ok' ? 'retried' : r);
    return r;
  }

  override async release(lease: Lease): Promise<LeaseOutcome> {
    const r = await super.release(lease);
    this.count(r === 'ok' ? 'released' : 'stale');
    return r;
  }

  override async fail(lease: Lease, reason: string): Promise<LeaseOutcome> {
    const r = await super.fail(lease, reason);
    this.count(r === 'ok' ? 'dead' : 'stale');
    return r;
  }
}

export interface WorkerSummary {
  pages: number;
  errors: number;
  robotsBlocked: number;
  redirects: number;
  enqueued: number;
  malformedUrls: number;
  released: number;
  exitReason: 'drained' | 'maxPages' | 'stopped';
}

class Counters {
  private pending = new Map<string, number>();
  constructor(private readonly metrics?: CrawlMetrics) {}
  add(domain: string, name: string, n = 1): void {
    for (const key of [`${domain}:${name}`, `*:${name}`]) this.pending.set(key, (this.pending.get(key) ?? 0) + n);
    const m = this.metrics;
    if (!m) return;
    if (/^\dxx$/.test(name)) m.pages.inc({ status_class: name }, n);
    else if (name === 'bytes') m.bytes.inc(n);
    else if (name === 'robots') m.robotsBlocked.inc(n);
    else if (name === 'dedupeHits') m.dedupeHits.inc(n);
  }
  async flush(redis: Redis | Cluster, key: string): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    const p = redis.pipeline();
    for (const [field, n] of batch) p.hincrby(key, field, n);
    await p.exec();
  }
}

/**
 * One crawl worker: dequeues URL leases, honours robots.txt, fetches,
 * extracts and enqueues links, commits, and writes one output line per URL.
 * Any number of these, in any number of processes, share one arena.
 */
export class CrawlWorker {
  private readonly queue: FairQueue;
  private readonly keys: CrawlKeys;
  private readonly scope: Scope;
  private readonly robots: RobotsCache;
  private readonly fetcher: Fetcher;
  private readonly bloom: BloomParams;
  private readonly counters: Counters;
  private readonly summary: WorkerSummary = { pages: 0, errors: 0, robotsBlocked: 0, redirects: 0, enqueued: 0, malformedUrls: 0, released: 0, exitReason: 'stopped' };
  private readonly stop = new AbortController();
  private readonly fetchAbort = new AbortController();
  private readonly id = randomBytes(6).toString('hex');
  private readonly leaseMs: number;

  constructor(
    private readonly redis: Redis | Cluster,
    private readonly seed: Seed,
    private readonly options: WorkerOptions = {},
  ) {
    this.counters = new Counters(options.metrics);
    const metrics = options.metrics;
    this.queue = new CountingQueue(redis, { leaseMs: options.leaseMs ?? WORKER_DEFAULTS.leaseMs }, (outcome) => metrics?.leases.inc({ outcome }));
    this.leaseMs = this.queue.leaseMs;
    this.keys = crawlKeys(seed.arena, this.queue.prefix);
    this.scope = new Scope(seed);
    this.robots = new RobotsCache(redis, this.keys);
    this.bloom = bloomParams(seed.bloom.expectedUrls, seed.bloom.falsePositiveRate);
    this.fetcher = new Fetcher({
      userAgent: seed.userAgent,
      timeoutMs: seed.requestTimeoutMs,
      maxBodyBytes: seed.maxBodyBytes,
      allowPrivateNetworks: seed.allowPrivateNetworks,
      ...(options.lookup ? { lookup: options.lookup } : {}),
    });
    // Every slot waits on these at once: concurrency can pass Node's default of 10 listeners.
    setMaxListeners(0, this.stop.signal, this.fetchAbort.signal);
    options.signal?.addEventListener('abort', () => this.halt('stopped'), { once: true });
  }

  private get log(): Logger | undefined {
    return this.options.logger;
  }

  /** Stops dequeuing; fetches in flight finish or are handed back. */
  halt(reason: WorkerSummary['exitReason'], abortFetches = true): void {
    if (!this.stop.signal.aborted) this.summary.exitReason = reason;
    this.stop.abort();
    if (abortFetches) this.fetchAbort.abort();
  }

  async run(): Promise<WorkerSummary> {
    const concurrency = this.options.concurrency ?? WORKER_DEFAULTS.concurrency;
    const flusher = setInterval(() => void this.counters.flush(this.redis, this.keys.stats).catch(() => undefined), 1000);
    const monitor = this.options.exitWhenDone || this.seed.maxPages !== null ? this.watchForEnd() : Promise.resolve();
    const progress = this.options.progress ? this.showProgress() : undefined;
    await this.fetcher.warmUp();
    try {
      await Promise.all([...Array.from({ length: concurrency }, () => this.slot()), monitor]);
    } finally {
      if (progress) clearInterval(progress);
      if (this.options.progress) process.stderr.write('\n');
      clearInterval(flusher);
      await this.counters.flush(this.redis, this.keys.stats).catch(() => undefined);
      await this.queue.close();
      await this.fetcher.close();
    }
    return { ...this.summary };
  }

  private async slot(): Promise<void> {
    let failures = 0;
    while (!this.stop.signal.aborted) {
      let lease: Lease | null;
      try {
        lease = await this.queue.take(this.seed.arena, { signal: this.stop.signal });
        failures = 0;
      } catch (err) {
        // Redis trouble the client could not ride out: log, back off (capped), try again.
        failures++;
        this.log?.warn({ err, failures }, 'dequeue failed; retrying');
        await sleep(Math.min(5000, 100 * 2 ** Math.min(failures, 6)), this.stop.signal);
        continue;
      }
      if (!lease) return;
      try {
        await this.process(lease);
      } catch (err) {
        // A bug or a Redis failure mid-URL: the lease expires and the URL comes back.
        this.log?.error({ err, url: lease.item }, 'processing a URL failed');
      }
    }
  }

  /** Redraws one line on stderr every second: this worker's pages/s and the arena's queue. */
  private showProgress(): NodeJS.Timeout {
    let last = { at: performance.now(), pages: 0 };
    return setInterval(() => {
      void this.queue.stats(this.seed.arena).then(
        (s) => {
          const now = performance.now();
          const rate = ((this.summary.pages - last.pages) * 1000) / (now - last.at);
          last = { at: now, pages: this.summary.pages };
          process.stderr.write(
            `\r\x1b[2Kweir ${this.seed.arena}: ${rate.toFixed(1)} pages/s here, ${this.summary.pages} pages, ${this.summary.errors} errors | arena: ${s.queued} queued, ${s.leased} leased, ${s.delayed} waiting, ${s.done} done, ${s.dead} dead`,
          );
        },
        () => undefined,
      );
    }, 1000);
  }

  private async watchForEnd(): Promise<void> {
    while (!this.stop.signal.aborted) {
      await sleep(WORKER_DEFAULTS.drainCheckMs, this.stop.signal);
      if (this.stop.signal.aborted) return;
      try {
        if (await this.ended()) return;
      } catch (err) {
        this.log?.warn({ err }, 'checking whether the arena is drained failed; will check again');
      }
    }
  }

  /** True (and the worker halted) when maxPages is reached or, with exitWhenDone, the arena is drained. */
  private async ended(): Promise<boolean> {
    if (this.seed.maxPages !== null) {
      const pages = Number((await this.redis.get(this.keys.pages)) ?? 0);
      if (pages >= this.seed.maxPages) {
        this.log?.info({ pages }, 'maxPages reached');
        this.halt('maxPages', false);
        return true;
      }
    }
    if (this.options.exitWhenDone) {
      const s = await this.queue.stats(this.seed.arena);
      if (s.drained) {
        this.halt('drained', false);
        return true;
      }
    }
    return false;
  }

  private async process(lease: Lease): Promise<void> {
    const item = decodeItem(lease.item);
    if (!item) {
      await this.queue.fail(lease, 'malformed queue item');
      return;
    }
    if (this.fetchAbort.signal.aborted) {
      await this.handBack(lease);
      return;
    }
    const url = new URL(item.u);
    const origin = url.origin;
    const domain = lease.queue;

    // robots.txt comes first for every origin, and its fetch uses this slot.
    const robots = await this.robots.get(origin);
    if (!robots || (robots.state.state === 'error' && robots.state.retryAt <= Date.now() && robots.state.failures < ROBOTS.maxFailures)) {
      if (await this.robots.lock(origin, this.id)) {
        // Nothing may be awaited between the slot's send time and the request.
        await this.fetcher.prepare(`${origin}/robots.txt`);
        const sendAt = await this.holdToSlot(lease);
        if (sendAt === null) {
          await this.robots.unlock(origin);
          return;
        }
        try {
          await this.fetchRobots(origin, domain, robots?.state.state === 'error' ? robots.state.failures : 0, (at) => this.sentLate(lease, sendAt, at));
        } finally {
          await this.robots.unlock(origin);
        }
        await this.queue.release(lease);
      } else {
        await this.queue.retry(lease, { delayMs: 500, countAttempt: false, reason: 'waiting for robots.txt' });
      }
      return;
    }
    if (robots.state.state === 'error') {
      if (robots.state.failures >= ROBOTS.maxFailures) {
        const reason = `robots.txt unavailable: ${robots.state.reason}`;
        await this.queue.fail(lease, reason);
        this.finish(lease, item, domain, { status: null, error: reason });
        return;
      }
      await this.queue.retry(lease, { delayMs: Math.max(100, robots.state.retryAt - Date.now()), countAttempt: false, reason: 'robots.txt unavailable for now' });
      return;
    }
    if (robots.matcher && !robots.matcher.isAllowed(url.pathname + url.search)) {
      await this.queue.commit(lease);
      this.summary.robotsBlocked++;
      this.counters.add(domain, 'robots');
      this.finish(lease, item, domain, { status: null, error: 'disallowed by robots.txt' });
      return;
    }

    // maxPages: reserve a page before fetching; hand it back if the fetch ends in no page.
    let reserved = false;
    if (this.seed.maxPages !== null) {
      const n = await this.redis.incr(this.keys.pages);
      if (n > this.seed.maxPages) {
        await this.redis.decr(this.keys.pages);
        this.halt('maxPages', false);
        await this.handBack(lease);
        return;
      }
      reserved = true;
    }
    const unreserve = async (): Promise<void> => {
      if (reserved) await this.redis.decr(this.keys.pages);
      reserved = false;
    };

    await this.fetcher.prepare(item.u);
    const sendAt = await this.holdToSlot(lease);
    if (sendAt === null) {
      await unreserve();
      return;
    }
    const keepAlive = setInterval(() => void this.queue.extend(lease, this.leaseMs).catch(() => undefined), Math.max(50, this.leaseMs / 2));
    let res: FetchResult;
    try {
      res = await this.fetcher.fetch(item.u, (ct, status) => status >= 200 && status < 300 && (ct === null || isHtml(ct)), this.fetchAbort.signal, (at) => this.sentLate(lease, sendAt, at));
    } catch (err) {
      clearInterval(keepAlive);
      if (err instanceof FetchError) this.options.metrics?.fetchSeconds.observe(err.elapsedMs / 1000);
      await unreserve();
      await this.fetchFailed(lease, item, domain, err);
      return;
    }
    clearInterval(keepAlive);
    this.options.metrics?.fetchSeconds.observe(res.elapsedMs / 1000);
    this.counters.add(domain, 'bytes', res.bytes);

    const status = res.status;
    if (status >= 300 && status < 400 && res.headers.location !== undefined) {
      await unreserve();
      await this.redirect(lease, item, domain, res);
      return;
    }
    if (status === 429 || (status === 503 && res.headers['retry-after'] !== undefined)) {
      await unreserve();
      const seconds = Math.min(WORKER_DEFAULTS.maxRetryAfterSeconds, retryAfterSeconds(res.headers['retry-after']) ?? WORKER_DEFAULTS.default429Seconds);
      await this.queue.pause(this.seed.arena, domain, Math.round(seconds * 1000));
      await this.queue.retry(lease, { delayMs: Math.round(seconds * 1000), countAttempt: false, reason: `HTTP ${status}, Retry-After ${seconds}s` });
      this.counters.add(domain, 'paced');
      this.log?.info({ domain, status, seconds }, 'server asked to slow down: domain paused');
      return;
    }
    if (status >= 500) {
      await unreserve();
      await this.retryLater(lease, item, domain, `HTTP ${status}`, { status, contentType: res.contentType, bytes: res.bytes, elapsedMs: res.elapsedMs });
      return;
    }

    // A final response: a page.
    let links = 0;
    let enqueued = 0;
    let title: string | null = null;
    let error: string | null = res.truncated ? `body over ${this.seed.maxBodyBytes} bytes: truncated` : null;
    if (status >= 200 && status < 300 && res.body) {
      const text = decodeBody(res.body, res.contentType);
      if (res.contentType !== null || /^\s*<(!doctype html|html|head|body)/i.test(text.slice(0, 512))) {
        const r = await this.followLinks(item, domain, res, text);
        links = r.links;
        enqueued = r.enqueued;
        title = r.title;
        if (r.error) error = r.error;
      }
    }
    await this.queue.commit(lease);
    this.summary.pages++;
    this.counters.add(domain, 'pages');
    this.counters.add(domain, `${Math.floor(status / 100)}xx`);
    if (status >= 400) this.summary.errors++;
    this.finish(lease, item, domain, { status, contentType: res.contentType, bytes: res.bytes, elapsedMs: res.elapsedMs, title, links, enqueued, error });
  }

  /** Reads a page's links (and the onPage hook's), scopes, dedupes and enqueues them: one queue call per domain. */
  private async followLinks(item: CrawlItem, domain: string, res: FetchResult, text: string): Promise<{ links: number; enqueued: number; title: string | null; error: string | null }> {
    const page = await extractLinksAsync(text, this.seed.productToken);
    const nofollow = this.seed.respectNofollow && (page.metaNofollow || headerNofollow(res.headers['x-robots-tag'], this.seed.productToken));
    let base: string = item.u;
    if (page.base !== null) base = normalizeUrl(page.base, item.u) ?? item.u;
    const hrefs = nofollow ? [] : this.seed.respectNofollow ? page.hrefs : [...page.hrefs, ...page.nofollowHrefs];
    let error: string | null = null;
    if (this.options.onPage) {
      try {
        const extra = await this.options.onPage({
          url: item.u,
          status: res.status,
          headers: res.headers,
          body: text,
          $: async () => (await import('cheerio')).load(text),
        });
        if (Array.isArray(extra)) hrefs.push(...extra.filter((u): u is string => typeof u === 'string'));
      } catch (err) {
        error = `onPage hook failed: ${(err as Error).message}`;
      }
    }
    const seen = new Map<string, URL>();
    const byDomain = new Map<string, string[]>();
    const baseUrl = new URL(base);
    for (const href of hrefs) {
      const u = normalizeToUrl(href, baseUrl);
      if (!u) {
        this.summary.malformedUrls++;
        this.counters.add(domain, 'malformed');
        continue;
      }
      if (!seen.has(u.href)) seen.set(u.href, u);
    }
    const depth = item.d + 1;
    if (this.seed.maxDepth === null || depth <= this.seed.maxDepth) {
      for (const [n, u] of seen) {
        const d = this.scope.decide(n, u);
        if (!d.ok) continue;
        const list = byDomain.get(d.domain) ?? [];
        list.push(n);
        byDomain.set(d.domain, list);
      }
    }
    const counts = await Promise.all(
      [...byDomain].map(([target, urls]) =>
        this.queue.enqueue(
          this.seed.arena,
          target,
          urls.map((u) => encodeItem({ u, d: depth, r: item.u, h: 0 })),
          { dedupe: urls.map((u) => bloomPositions(u, this.bloom)) },
        ),
      ),
    );
    const enqueued = counts.reduce((a, b) => a + b, 0);
    const candidates = [...byDomain.values()].reduce((a, l) => a + l.length, 0);
    this.summary.enqueued += enqueued;
    this.counters.add(domain, 'enqueued', enqueued);
    this.counters.add(domain, 'dedupeHits', candidates - enqueued);
    return { links: seen.size, enqueued, title: page.title, error };
  }

  /** A redirect is not followed inline: the target is queued as a new URL (scope, robots, dedupe, rate limit apply). */
  private async redirect(lease: Lease, item: CrawlItem, domain: string, res: FetchResult): Promise<void> {
    const loc = Array.isArray(res.headers.location) ? res.headers.location[0] : res.headers.location;
    const target = loc === undefined ? null : normalizeUrl(loc, item.u);
    let error: string | null = null;
    if (!target) {
      error = 'redirect to a malformed or non-http URL';
      this.summary.malformedUrls++;
    } else if (item.h + 1 > this.seed.maxRedirects) {
      error = `more than ${this.seed.maxRedirects} redirects`;
    } else {
      const d = this.scope.decide(target);
      if (!d.ok) {
        error = `redirect target ${d.reason}`;
      } else {
        const n = await this.queue.enqueue(this.seed.arena, d.domain, [encodeItem({ u: target, d: item.d, r: item.u, h: item.h + 1 })], {
          dedupe: [bloomPositions(target, this.bloom)],
        });
        this.counters.add(domain, 'enqueued', n);
        this.summary.enqueued += n;
      }
    }
    await this.queue.commit(lease);
    this.summary.redirects++;
    this.counters.add(domain, 'redirects');
    this.finish(lease, item, domain, { status: res.status, contentType: res.contentType, bytes: res.bytes, elapsedMs: res.elapsedMs, redirect: target, error });
  }

  private async fetchFailed(lease: Lease, item: CrawlItem, domain: string, err: unknown): Promise<void> {
    if (this.fetchAbort.signal.aborted) {
      await this.handBack(lease);
      return;
    }
    const e = err instanceof FetchError ? err : new FetchError('WEIR_NETWORK', String((err as Error)?.message ?? err), 0);
    if (e.code === 'WEIR_PRIVATE_ADDRESS') {
      await this.queue.fail(lease, e.message);
      this.summary.errors++;
      this.counters.add(domain, 'errors');
      this.finish(lease, item, domain, { status: null, elapsedMs: e.elapsedMs, error: e.message });
      return;
    }
    await this.retryLater(lease, item, domain, `${e.code}: ${e.message}`, { status: null, elapsedMs: e.elapsedMs });
  }

  /** 5xx and network errors: retry with exponential backoff and jitter; the queue dead-letters after maxAttempts. */
  private async retryLater(lease: Lease, item: CrawlItem, domain: string, reason: string, rec: Partial<PageRecord>): Promise<void> {
    const backoff = Math.min(WORKER_DEFAULTS.retryMaxMs, (this.options.retryBaseMs ?? WORKER_DEFAULTS.retryBaseMs) * 2 ** (lease.attempt - 1));
    const delayMs = Math.round(backoff * (0.5 + Math.random()));
    const r = await this.queue.retry(lease, { delayMs, reason, countAttempt: true });
    this.counters.add(domain, 'retries');
    if (r === 'dead') {
      this.summary.errors++;
      this.counters.add(domain, 'errors');
      this.finish(lease, item, domain, { ...rec, error: `gave up after ${lease.attempt} attempts: ${reason}` });
    } else {
      this.log?.debug({ url: item.u, reason, delayMs, attempt: lease.attempt }, 'will retry');
    }
  }

  /**
   * Waits for the slot's send time. On time (within sendSlackMs): go. Late
   * (the event loop was busy): the request may still go if the domain's next
   * slot can be pushed out by the lateness first, so the gap after it is
   * whole; otherwise (no time left before the next slot) the lease is handed
   * back unused. Unlimited domains have no gaps to keep: no wait.
   */
  private async holdToSlot(lease: Lease): Promise<number | null> {
    if (lease.intervalMs === 0) return performance.now();
    // The slot's time on this clock is known to within ±u (half the best round
    // trip seen): wait for its latest possible time, so a request is never
    // early, and count the ±u spread as lateness the next slot must absorb.
    const u = this.queue.clock.uncertaintyMs;
    const sendAt = lease.localServedAt + WORKER_DEFAULTS.sendDelayMs + u;
    await sleepUntil(sendAt, this.fetchAbort.signal);
    if (this.fetchAbort.signal.aborted) {
      await this.handBack(lease);
      return null;
    }
    const late = performance.now() - sendAt + 2 * u;
    if (late <= WORKER_DEFAULTS.sendSlackMs) return sendAt;
    // Push the domain's next slot out by the lateness (plus what the pause call
    // itself may add), while that slot is still ahead; then send.
    const cover = late + 5;
    if (lease.intervalMs - WORKER_DEFAULTS.sendDelayMs - cover > 0) {
      await this.pushNextSlot(lease, cover);
      const now = performance.now();
      if (now - sendAt <= cover && this.queue.clock.toRedis(now) < lease.servedAt + lease.intervalMs) {
        this.counters.add(lease.queue, 'lateSends');
        // The pause already covers this much lateness.
        return sendAt + cover - 2 * u;
      }
    }
    this.counters.add(lease.queue, 'lateSlots');
    await this.handBack(lease);
    return null;
  }

  /**
   * The request's headers reached the socket at `at` (local clock). Later
   * than planned by more than the slack (undici's own start-up, a busy event
   * loop): push the domain's next slot out by as much, so the gap after this
   * request is still whole.
   */
  private sentLate(lease: Lease, plannedAt: number, at: number): void {
    if (lease.intervalMs === 0) return;
    const u = this.queue.clock.uncertaintyMs;
    const late = at - plannedAt + 2 * u;
    if (late <= WORKER_DEFAULTS.sendSlackMs) return;
    this.counters.add(lease.queue, 'lateSends');
    void this.pushNextSlot(lease, late).catch(() => undefined);
  }

  /**
   * A request `lateMs` later than its slot's send time: pause the domain so
   * its next slot comes no sooner than a full interval after this request
   * (Redis time: served + lateness + interval).
   */
  private async pushNextSlot(lease: Lease, lateMs: number): Promise<void> {
    const until = lease.servedAt + lateMs + lease.intervalMs + 1;
    const ms = Math.ceil(until - this.queue.clock.toRedis(performance.now()));
    if (ms > 0) await this.queue.pause(this.seed.arena, lease.queue, ms);
  }

  private async handBack(lease: Lease): Promise<void> {
    if ((await this.queue.release(lease)) === 'ok') this.summary.released++;
  }

  private async fetchRobots(origin: string, domain: string, failures: number, onSent?: (at: number) => void): Promise<void> {
    let url = `${origin}/robots.txt`;
    let state: RobotsState | null = null;
    // When the request went out, this process's clock (a Crawl-delay counts from it).
    const sentAt = performance.now();
    for (let hop = 0; hop <= ROBOTS.maxRedirects && !state; hop++) {
      let res: FetchResult;
      try {
        res = await this.fetcher.fetch(url, () => true, this.fetchAbort.signal, hop === 0 ? onSent : undefined);
      } catch (err) {
        const reason = err instanceof FetchError ? `${err.code}: ${err.message}` : String(err);
        // A refused address will be refused again: no point in retrying.
        const n = err instanceof FetchError && err.code === 'WEIR_PRIVATE_ADDRESS' ? ROBOTS.maxFailures : failures + 1;
        state = { state: 'error', failures: n, retryAt: Date.now() + robotsRetryMs(n, this.options.robotsRetryBaseMs), reason };
        break;
      }
      const loc = res.headers.location;
      if (res.status >= 300 && res.status < 400 && loc !== undefined) {
        const next = normalizeUrl(Array.isArray(loc) ? (loc[0] ?? '') : loc, url);
        if (!next) break;
        url = next;
        continue;
      }
      if (res.status >= 200 && res.status < 300) {
        const rules = parseRobots((res.body ?? Buffer.alloc(0)).subarray(0, ROBOTS_MAX_BYTES).toString('utf8'), this.seed.productToken);
        state = { state: 'rules', rules, fetchedAt: Date.now() };
      } else if (res.status >= 400 && res.status < 500) {
        state = { state: 'allow-all', status: res.status, fetchedAt: Date.now() };
      } else {
        state = { state: 'error', failures: failures + 1, retryAt: Date.now() + robotsRetryMs(failures + 1, this.options.robotsRetryBaseMs), reason: `HTTP ${res.status}` };
      }
    }
    // Too many redirects: treated as unreachable (RFC 9309 §2.3.1.2 allows either).
    state ??= { state: 'error', failures: failures + 1, retryAt: Date.now() + robotsRetryMs(failures + 1, this.options.robotsRetryBaseMs), reason: 'too many redirects' };
    await this.robots.set(origin, state);
    this.counters.add(domain, 'robotsFetches');
    this.log?.info({ origin, robots: state.state, ...(state.state === 'error' ? { reason: state.reason, failures: state.failures } : {}) }, 'robots.txt');
    if (state.state === 'rules' && state.rules.crawlDelay !== null && state.rules.crawlDelay > 0) {
      await this.applyCrawlDelay(origin, domain, state.rules.crawlDelay, sentAt);
    }
  }

  /** Crawl-delay lowers a domain's rate, never raises it; the largest delay of the domain's origins wins. */
  private async applyCrawlDelay(origin: string, domain: string, delaySeconds: number, robotsSentAt: number): Promise<void> {
    const capped = Math.min(ROBOTS.maxCrawlDelaySeconds, delaySeconds);
    await this.redis.hset(this.keys.crawlDelays, origin, String(capped));
    const configured = this.seed.rateLimits[domain];
    if (configured === undefined) return;
    // Recompute from every origin's delay, and again if another worker added one meanwhile.
    for (let i = 0; i < 3; i++) {
      const all = await this.redis.hgetall(this.keys.crawlDelays);
      const delays = Object.entries(all)
        .filter(([o]) => this.scope.domainOf(`${o}/`) === domain)
        .map(([, d]) => Number(d));
      const delay = Math.max(...delays);
      const byDelay = 1 / delay;
      const rate = configured === 'unlimited' ? byDelay : Math.min(configured, byDelay);
      await this.queue.setLimits(this.seed.arena, { [domain]: { rate, maxInFlight: this.seed.maxInFlightPerDomain } });
      const again = await this.redis.hgetall(this.keys.crawlDelays);
      if (Object.keys(again).length === Object.keys(all).length) break;
    }
    // The new interval counts from when robots.txt actually went out, which may
    // have been after its slot (setLimits counts from the slot): pause up to it.
    const clock = this.queue.clock;
    const nextSend = clock.toRedis(robotsSentAt) + capped * 1000 - WORKER_DEFAULTS.sendDelayMs + 1;
    const ms = Math.ceil(nextSend - clock.toRedis(performance.now()));
    if (ms > 0) await this.queue.pause(this.seed.arena, domain, ms);
    this.log?.info({ domain, origin, crawlDelay: capped }, 'Crawl-delay applied');
  }

  private finish(lease: Lease, item: CrawlItem, domain: string, rec: Partial<PageRecord>): void {
    this.options.out?.write({
      url: item.u,
      domain,
      status: rec.status ?? null,
      contentType: rec.contentType ?? null,
      bytes: rec.bytes ?? 0,
      depth: item.d,
      referrer: item.r,
      fetchedAt: new Date().toISOString(),
      elapsedMs: rec.elapsedMs ?? 0,
      title: rec.title ?? null,
      links: rec.links ?? 0,
      enqueued: rec.enqueued ?? 0,
      redirect: rec.redirect ?? null,
      attempt: lease.attempt,
      error: rec.error ?? null,
    });
  }
}

/** Retry-After: delta-seconds or an HTTP date. */
export function retryAfterSeconds(value: string | string[] | undefined): number | null {
  const v = Array.isArray(value) ? value[0] : value;
  if (v === undefined) return null;
  if (/^\s*\d+\s*$/.test(v)) return Number(v);
  const t = Date.parse(v);
  if (Number.isNaN(t)) return null;
  return Math.max(0, (t - Date.now()) / 1000);
}
