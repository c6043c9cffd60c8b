import { WeirError } from '../errors.js';
import { MIN_LEASE_MS, WORKER_DEFAULTS } from '../crawl/worker-options.js';

export const USAGE = `weir — a polite, horizontally scalable web crawler

usage:
  weir demo                              crawl the bundled offline demo web (2 workers, a fresh arena)
  weir kickoff SEED                      store the seed, set limits, enqueue the start URLs
  weir worker SEED [--concurrency N] [--out FILE.jsonl] [--warc DIR] [--exit-when-done] [--metrics-port P [--metrics-host H] [--metrics-top N] [--metrics-domain D,...]] [--redis-wait S]
  weir crawl SEED [--workers N] [--concurrency N] [--out FILE.jsonl] [--warc DIR]
  weir status SEED [--json] [--watch] [--top N [--offset K] [--by backlog|waiting|errors] | --domain D ...]
  weir status SEED --serve PORT [--host H]   a live page of the arena at http://H:PORT/ (read-only)
  weir dead SEED [--limit N] [--offset N] [--requeue] [--json]
                                         dead-lettered URLs with reasons, a page at a time (100;
                                         oldest first) and how many in all; --requeue re-drives all
  weir hold SEED [DOMAIN]                stop dequeuing (one domain, or the arena); leases out are kept
  weir unhold SEED [DOMAIN]
  weir clear SEED --yes                  delete every key of the arena (in bounded batches)
  weir redis-stop                        stop the embedded Redis of this directory (data stays)

options:
  --redis URL        Redis to use (else REDIS_URL, else 127.0.0.1:6379 if a Redis answers,
                     else a private redis-server under ./.weir/redis/)
  --concurrency N    fetches in flight in one worker (default ${WORKER_DEFAULTS.concurrency})
  --workers N        worker processes for crawl (default: CPU cores, but no more than the
                     seed's domains × maxInFlightPerDomain fill at --concurrency each)
  --out FILE         one JSON line per URL (crawl truncates it, worker appends)
  --warc DIR         keep every request and response in WARC/1.1 files in DIR, one set per worker
                     process (<arena>-<UTC time>-<pid>-<seq>.warc.gz)
  --warc-max-bytes N start a new WARC file once one passes N bytes (default 1 GiB)
  --exit-when-done   exit when the arena is drained or maxPages is reached
  --redis-wait S     a worker started while Redis is unreachable retries for S seconds
                     (capped backoff, each try logged) before exiting 3 (default 60)
  --metrics-port P   serve Prometheus metrics at http://127.0.0.1:P/metrics (worker)
  --metrics-host H   address the metrics listen on (default 127.0.0.1; 0.0.0.0 for a scraper elsewhere)
  --metrics-top N    per-domain series for the N domains with most URLs queued (0-500, default 500)
  --metrics-domain D per-domain series for domain D whatever its backlog (repeatable or comma-separated;
                     at most 500)
  --cluster-nodes L  Redis Cluster nodes a connection (and the password) may go to, host:port,...
                     (else WEIR_CLUSTER_NODES; unset: any node the cluster announces)
  --lease-ms N       how long a worker holds a URL before it goes back if the worker dies
                     (default ${WORKER_DEFAULTS.leaseMs}, at least 1000; renewed every third of it while a URL is handled)
  --log-format F     human (default on a terminal) or json (default when piped)
  --json             status as JSON
  --watch            status, refreshed every second
  --top N            status rows for the N domains (at most 500) with the biggest backlog (--by
                     waiting: eligible and waiting longest for a worker; errors: most failed URLs);
                     an arena of over 20,000 domains shows the top 50 by backlog unless asked
  --by B             backlog, waiting or errors (with --top; alone: the top 50)
  --offset K         status: the rows after the first K of that order (a page further down;
                     K + N ≤ 10,000); dead: the URLs after the first K
  --domain D         status rows for domain D (repeatable)
  --serve PORT       status as a live web page on PORT (0: any free port), JSON at /api/status
  --host H           address the page listens on (default 127.0.0.1: loopback only;
                     reach it from elsewhere through an SSH tunnel)

exit codes: 0 finished, 1 other failure, 2 bad usage or seed file, 3 Redis unreachable,
            130/143 stopped by SIGINT/SIGTERM after handing leases back`;

export class UsageError extends WeirError {
  constructor(message: string) {
    super('WEIR_USAGE', message);
    this.name = 'UsageError';
  }
}

export function positiveInt(name: string, v: string | undefined, fallback: number): number {
  if (v === undefined) return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`--${name} must be a whole number ≥ 1, got ${v}`);
  return n;
}

/** --lease-ms: at least MIN_LEASE_MS (renewal, every third of a lease, must land on a loaded machine too). */
export function leaseMs(v: string | undefined): number {
  const n = positiveInt('lease-ms', v, WORKER_DEFAULTS.leaseMs);
  if (n < MIN_LEASE_MS) throw new UsageError(`--lease-ms must be at least ${MIN_LEASE_MS} (a lease is renewed every third of it while its URL is handled; shorter ones could expire under load), got ${n}`);
  return n;
}

export function nonNegative(name: string, v: string): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) throw new UsageError(`--${name} must be a number ≥ 0, got ${v}`);
  return n;
}

export function portNumber(v: string, flag: string): number {
  const n = Number(v);
  if (!/^\d+$/.test(v) || !Number.isInteger(n) || n < 0 || n > 65535) throw new UsageError(`--${flag} must be a port number (0 for any free one), got ${v}`);
  return n;
}
