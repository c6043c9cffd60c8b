import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { FairQueue, QueueStats } from '../../queue/index.js';
import type { TallyName } from './names.js';

/** The pacer's tallies of late requests, as weir_late_requests_total's outcomes. */
const LATE_OUTCOMES: Partial<Record<TallyName, string>> = { lateSends: 'written_late', lateSlots: 'not_sent' };

/**
 * A worker's Prometheus metrics (prom-client), served at /metrics by
 * `weir worker --metrics-port P`. Counters are this worker's own; the
 * per-domain queued/leased gauges and the arena's expired-lease count are
 * read from Redis at each scrape, not guessed.
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

  constructor(queue: FairQueue, arena: string) {
    const registers = [this.registry];
    // One read of every queue's counts per scrape, shared by the two per-domain
    // gauges (a scrape collects them concurrently): a read in flight is joined.
    let reading: Promise<QueueStats[]> | undefined;
    const perDomain = (): Promise<QueueStats[]> => {
      reading ??= queue.allQueueStats(arena).finally(() => (reading = undefined));
      return reading;
    };
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
    new Gauge({
      name: 'weir_domain_queued',
      help: 'URLs queued per domain (from Redis)',
      labelNames: ['domain'],
      registers,
      async collect() {
        this.reset();
        for (const q of await perDomain()) this.set({ domain: q.name }, q.queued);
      },
    });
    new Gauge({
      name: 'weir_domain_leased',
      help: 'URLs leased (being fetched) per domain, by all workers (from Redis)',
      labelNames: ['domain'],
      registers,
      async collect() {
        this.reset();
        for (const q of await perDomain()) this.set({ domain: q.name }, q.leased);
      },
    });
    new Gauge({
      name: 'weir_arena_leases_expired',
      help: 'Leases of the arena that expired and went back (all workers, from Redis)',
      registers,
      async collect() {
        this.set((await queue.stats(arena)).expired);
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

  /** Serves /metrics on 0.0.0.0:port (0 = any free port); resolves the port. */
  async listen(port: number, host = '0.0.0.0'): Promise<number> {
    this.server = createServer((req, res) => {
      if (req.url !== '/metrics') {
        res.writeHead(404).end();
        return;
      }
      this.registry.metrics().then(
        (text) => {
          res.writeHead(200, { 'content-type': this.registry.contentType });
          res.end(text);
        },
        (err: unknown) => {
          res.writeHead(500, { 'content-type': 'text/plain' });
          res.end(String(err));
        },
      );
    });
    await new Promise<void>((resolve) => this.server?.listen(port, host, resolve));
    return (this.server.address() as AddressInfo).port;
  }

  async close(): Promise<void> {
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise((r) => this.server?.close(r));
  }
}

