import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { WeirError } from '../../errors.js';
import type { FairQueue, QueueStats } from '../../queue/index.js';
import type { TallyName } from './names.js';
import { METRICS_LIMITS, type MetricsDomains } from './metrics-limits.js';

/** The pacer's tallies of late requests, as weir_late_requests_total's outcomes. */
const LATE_OUTCOMES: Partial<Record<TallyName, string>> = { lateSends: 'written_late', lateSlots: 'not_sent' };

/** Per-domain gauges read from Redis: name, help, and the value of a queue's stats. */
const DOMAIN_GAUGES: [string, string, (q: QueueStats) => number][] = [
  ['weir_domain_queued', 'URLs queued per domain (from Redis)', (q) => q.queued],
  ['weir_domain_leased', 'URLs leased (being fetched) per domain, by all workers (from Redis)', (q) => q.leased],
  [
    'weir_domain_interval_seconds',
    'Seconds between two requests to a domain in force now, by all workers (from Redis): its limit, a Crawl-delay, or longer when adaptivePace learned a slower pace; 0: unlimited',
    (q) => (q.pace === 'unlimited' ? 0 : 1 / q.pace),
  ],
];

function domainGauges(registers: Registry[], perDomain: () => Promise<QueueStats[]>): void {
  for (const [name, help, value] of DOMAIN_GAUGES) {
    new Gauge({
      name,
      help,
      labelNames: ['domain'],
      registers,
      async collect() {
        this.reset();
        for (const q of await perDomain()) this.set({ domain: q.name }, value(q));
      },
    });
  }
}

/**
 * A worker's Prometheus metrics (prom-client), served at /metrics by
 * `weir worker --metrics-port P`. Counters are this worker's own; the
 * per-domain queued/leased gauges and the arena's expired-lease count are
 * read from Redis (not guessed), at most once per METRICS_LIMITS.redisEveryMs.
 */
export class CrawlMetrics {
  readonly registry = new Registry();
  readonly pages: Counter<'status_class'>;
  readonly bytes: Counter;
  readonly fetchSeconds: Histogram;
  readonly leases: Counter<'outcome'>;
  readonly robotsBlocked: Counter;
  readonly dedupeHits: Counter;
  readonly lateRequests: Counter<'outcome'>;
  private server: Server | undefined;

  /**
   * `redisEveryMs`: how old a read of the arena a scrape may get (default
   * METRICS_LIMITS.redisEveryMs); `domains`: which get series (default the
   * maxDomains busiest).
   */
  constructor(queue: FairQueue, arena: string, options: { redisEveryMs?: number; domains?: MetricsDomains } = {}) {
    const every = options.redisEveryMs ?? METRICS_LIMITS.redisEveryMs;
    const top = options.domains?.top ?? METRICS_LIMITS.maxDomains;
    const named = [...new Set(options.domains?.named ?? [])];
    if (!Number.isInteger(top) || top < 0 || top > METRICS_LIMITS.maxDomains) throw new RangeError(`metrics: top domains must be a whole number from 0 to ${METRICS_LIMITS.maxDomains}, got ${top}`);
    if (named.length > METRICS_LIMITS.maxNamedDomains) throw new RangeError(`metrics: at most ${METRICS_LIMITS.maxNamedDomains} domains named, got ${named.length}`);
    const registers = [this.registry];
    // One read of the shown queues' counts, shared by the per-domain gauges
    // and by every scrape for redisEveryMs: a read in flight is joined.
    const perDomain = cachedRead(every, () => shownDomains(queue, arena, top, named));
    const arenaStats = cachedRead(every, () => queue.stats(arena));
    this.pages = new Counter({ name: 'weir_pages_total', help: 'Pages fetched to a final response, by status class', labelNames: ['status_class'], registers });
    this.bytes = new Counter({ name: 'weir_bytes_total', help: 'Body bytes read (after decompression)', registers });
    this.fetchSeconds = new Histogram({
      name: 'weir_fetch_duration_seconds',
      help: 'Time from sending a request to the end of its body (or its failure)',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.leases = new Counter({ name: 'weir_leases_total', help: 'Leases by what became of them: taken, committed, retried, released, dead, stale', labelNames: ['outcome'], registers });
    this.robotsBlocked = new Counter({ name: 'weir_robots_blocked_total', help: 'URLs skipped because robots.txt disallows them', registers });
    this.dedupeHits = new Counter({ name: 'weir_dedupe_hits_total', help: 'In-scope links dropped as already seen (shared Bloom filter)', registers });
    this.lateRequests = new Counter({
      name: 'weir_late_requests_total',
      help: "Requests later than their rate slot: written_late (over 5 ms after it; the domain's next slot counts from the write), not_sent (past the send window: the slot given up)",
      labelNames: ['outcome'],
      registers,
    });
    domainGauges(registers, perDomain);
    new Gauge({
      name: 'weir_arena_leases_expired',
      help: 'Leases of the arena that expired and went back (all workers, from Redis)',
      registers,
      async collect() {
        this.set((await arenaStats()).expired);
      },
    });
  }

  /** A counted tally (tally.ts), for the counters that mirror one. */
  count(name: TallyName, n: number): void {
    if (/^\dxx$/.test(name)) this.pages.inc({ status_class: name }, n);
    else if (name === 'bytes') this.bytes.inc(n);
    else if (name === 'robots') this.robotsBlocked.inc(n);
    else if (name === 'dedupeHits') this.dedupeHits.inc(n);
    else if (name in LATE_OUTCOMES) this.lateRequests.inc({ outcome: LATE_OUTCOMES[name] }, n);
  }

  /**
   * Serves GET /metrics on host:port (0 = any free port; host 127.0.0.1
   * unless told: the counts name every domain crawled); resolves the port.
   * A port in use is a WEIR_METRICS error, not a crash.
   */
  async listen(port: number, host = '127.0.0.1'): Promise<number> {
    // (Deadlines are checked every second, not Node's default 30.)
    const server = createServer({ requestTimeout: METRICS_LIMITS.requestMs, headersTimeout: METRICS_LIMITS.requestMs, keepAliveTimeout: METRICS_LIMITS.idleMs, connectionsCheckingInterval: 1000 }, (req, res) => {
      if (req.url !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
        res.writeHead(req.url === '/metrics' ? 405 : 404).end();
        return;
      }
      this.registry.metrics().then(
        (text) => {
          res.writeHead(200, { 'content-type': this.registry.contentType });
          res.end(req.method === 'HEAD' ? undefined : text);
        },
        (err: unknown) => {
          res.writeHead(500, { 'content-type': 'text/plain' });
          res.end(String(err));
        },
      );
    });
    server.maxConnections = METRICS_LIMITS.maxConnections;
    await new Promise<void>((resolve, reject) => {
      server.once('error', (err: NodeJS.ErrnoException) => reject(new WeirError('WEIR_METRICS', `metrics: cannot listen on ${host}:${port}: ${err.code ?? err.message}`, { cause: err })));
      server.listen(port, host, resolve);
    });
    // Later socket errors are the client's business; never an unhandled 'error'.
    server.on('error', () => undefined);
    this.server = server;
    return (server.address() as AddressInfo).port;
  }

  async close(): Promise<void> {
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise((r) => this.server?.close(r));
  }
}

/**
 * `read`, at most once per `everyMs`: a call while it runs joins it (the
 * two per-domain gauges of one scrape share one read, whatever `everyMs`),
 * and calls until `everyMs` after it started get its result.
 */
function cachedRead<T>(everyMs: number, read: () => Promise<T>): () => Promise<T> {
  let last: { at: number; value: Promise<T>; running: boolean } | null = null;
  return () => {
    if (last && (last.running || performance.now() - last.at < everyMs)) return last.value;
    const entry = { at: performance.now(), value: read(), running: true };
    last = entry;
    entry.value.then(
      () => (entry.running = false),
      // A failed read is not kept: the next scrape asks again.
      () => {
        if (last === entry) last = null;
      },
    );
    return entry.value;
  };
}

/** The `top` busiest domains and the `named` ones (those with a queue), each once. */
async function shownDomains(queue: FairQueue, arena: string, top: number, named: readonly string[]): Promise<QueueStats[]> {
  const [busiestRows, namedRows] = await Promise.all([top > 0 ? busiestDomains(queue, arena, top) : [], named.length > 0 ? queue.namedQueueStats(arena, named) : []]);
  const seen = new Set(busiestRows.map((q) => q.name));
  return [...busiestRows, ...namedRows.filter((q) => !seen.has(q.name))];
}

/**
 * The `n` domains with most URLs queued: every domain of an arena of at
 * most n, else read from the backlog index (FairQueue.busiestQueues),
 * without reading every queue; an arena made before the index is read whole.
 */
async function busiestDomains(queue: FairQueue, arena: string, n: number): Promise<QueueStats[]> {
  if ((await queue.stats(arena)).queues <= n) return busiest(await queue.allQueueStats(arena), n);
  return (await queue.busiestQueues(arena, 'backlog', n))?.queues ?? busiest(await queue.allQueueStats(arena), n);
}

/** The `n` domains with most URLs queued and leased, of every queue read. */
function busiest(stats: QueueStats[], n: number): QueueStats[] {
  if (stats.length <= n) return stats;
  return [...stats].sort((a, b) => b.queued + b.leased - (a.queued + a.leased)).slice(0, n);
}
