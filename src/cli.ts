#!/usr/bin/env node
import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { availableParallelism } from 'node:os';
import { isDeepStrictEqual, parseArgs } from 'node:util';
import { pino, type Logger } from 'pino';
import type { Redis } from 'ioredis';
import { FairQueue, WeirError, type DeadItem } from './queue/index.js';
import { clearArena } from './crawl/clear.js';
import { runDemo } from './demo/run.js';
import { EmbeddedRedis } from './embedded-redis.js';
import { kickoff, readStoredSeed } from './crawl/kickoff.js';
import { JsonlWriter } from './crawl/output.js';
import { loadSeedFile, SeedError, type Seed } from './crawl/seed.js';
import { crawlStatus, formatStatus, table } from './crawl/status.js';
import { CrawlWorker, WORKER_DEFAULTS } from './crawl/worker.js';
import { CrawlMetrics } from './crawl/metrics.js';
import { connectRedis, RedisUnreachableError } from './redis.js';

import { EXIT, pickRedis, runCrawl, warnEviction } from './crawl-command.js';

export { EXIT };

const USAGE = `weir — a polite, horizontally scalable web crawler

usage:
  weir demo                              crawl the bundled offline demo web (2 workers, a fresh arena)
  weir kickoff SEED                      store the seed, set limits, enqueue the start URLs
  weir worker SEED [--concurrency N] [--out FILE.jsonl] [--exit-when-done] [--metrics-port P] [--redis-wait S]
  weir crawl SEED [--workers N] [--concurrency N] [--out FILE.jsonl]
  weir status SEED [--json] [--watch]
  weir dead SEED [--requeue] [--json]    list dead-lettered URLs with reasons; --requeue re-drives them
  weir hold SEED [DOMAIN]                stop dequeuing (one domain, or the arena); leases out are kept
  weir unhold SEED [DOMAIN]
  weir clear SEED --yes                  delete every key of the arena (in bounded batches)
  weir redis-stop                        stop the embedded Redis of this directory (data stays)

options:
  --redis URL        Redis to use (else REDIS_URL, else 127.0.0.1:6379 if a Redis answers,
                     else a private redis-server under ./.weir/redis/)
  --concurrency N    fetches in flight in one worker (default ${WORKER_DEFAULTS.concurrency})
  --workers N        worker processes for crawl (default: CPU cores)
  --out FILE         one JSON line per URL (crawl truncates it, worker appends)
  --exit-when-done   exit when the arena is drained or maxPages is reached
  --redis-wait S     a worker started while Redis is unreachable retries for S seconds
                     (capped backoff, each try logged) before exiting 3 (default 60)
  --metrics-port P   serve Prometheus metrics at http://0.0.0.0:P/metrics (worker)
  --lease-ms N       how long a worker holds a URL before it goes back if the worker dies
                     (default ${WORKER_DEFAULTS.leaseMs}; renewed while a fetch runs)
  --json             status as JSON
  --watch            status, refreshed every second

exit codes: 0 finished, 1 other failure, 2 bad usage or seed file, 3 Redis unreachable,
            130/143 stopped by SIGINT/SIGTERM after handing leases back`;

class UsageError extends WeirError {
  constructor(message: string) {
    super('WEIR_USAGE', message);
  }
}

function makeLogger(): Logger {
  return pino({ level: process.env.WEIR_LOG_LEVEL ?? 'info', base: { pid: process.pid } }, pino.destination(2));
}

function positiveInt(name: string, v: string | undefined, fallback: number): number {
  if (v === undefined) return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`--${name} must be a whole number ≥ 1, got ${v}`);
  return n;
}

function nonNegative(name: string, v: string): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) throw new UsageError(`--${name} must be a number ≥ 0, got ${v}`);
  return n;
}

function portNumber(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new UsageError(`--metrics-port must be a port number (0 for any free one), got ${v}`);
  return n;
}

/** Waits for the seed kickoff stored in the arena; returns it. */
async function storedSeed(redis: Redis, seed: Seed, log: Logger, signal: AbortSignal): Promise<Seed> {
  let warned = false;
  while (!signal.aborted) {
    const stored = await readStoredSeed(redis, seed.arena);
    if (stored) {
      if (!isDeepStrictEqual(stored, seed)) log.warn({ arena: seed.arena }, 'the seed file differs from the one kickoff stored in the arena: using the stored one');
      return stored;
    }
    if (!warned) log.info({ arena: seed.arena }, 'waiting for kickoff of this arena');
    warned = true;
    await new Promise((r) => setTimeout(r, 500));
  }
  return seed;
}

interface Signals {
  signal: AbortSignal;
  exitCode: () => number | null;
}

/** First SIGINT/SIGTERM: stop and hand leases back. Second: exit at once (leases expire and come back). */
function trapSignals(log: Logger): Signals {
  const ac = new AbortController();
  let code: number | null = null;
  const on = (sig: 'SIGINT' | 'SIGTERM', exit: number) =>
    process.on(sig, () => {
      if (code !== null) process.exit(exit);
      code = exit;
      log.info({ signal: sig }, 'stopping: handing leases back (signal again to exit at once)');
      ac.abort();
    });
  on('SIGINT', EXIT.sigint);
  on('SIGTERM', EXIT.sigterm);
  return { signal: ac.signal, exitCode: () => code };
}

async function cmdKickoff(seedPath: string, url: string, log: Logger): Promise<number> {
  const seed = await loadSeedFile(seedPath);
  const redis = await connectRedis(url);
  await warnEviction(redis, log);
  try {
    const r = await kickoff(redis, seed);
    log.info({ arena: seed.arena, ...r }, 'kickoff done');
    process.stdout.write(`arena ${seed.arena}: ${Object.keys(seed.rateLimits).length} domains, ${r.enqueued} start URLs enqueued (${seed.start.length - r.enqueued} already seen)\n`);
    return EXIT.ok;
  } finally {
    redis.disconnect();
  }
}

async function cmdWorker(
  seedPath: string,
  url: string,
  opts: { concurrency: number; out?: string; exitWhenDone: boolean; leaseMs: number; metricsPort?: number; redisWaitMs: number },
  log: Logger,
): Promise<number> {
  const local = await loadSeedFile(seedPath);
  const sig = trapSignals(log);
  const redis = await connectRedis(url, {
    waitMs: opts.redisWaitMs,
    connectTimeoutMs: 2000,
    onRetry: (attempt, delayMs, error) => log.warn({ attempt, delayMs, error }, `Redis unreachable (${error}): retrying in ${delayMs} ms`),
    onReconnect: (attempt, delayMs) => log.warn({ attempt, delayMs }, 'Redis connection lost: reconnecting'),
  });
  await warnEviction(redis, log);
  log.info({ arena: local.arena }, 'worker starting');
  const seed = await storedSeed(redis, local, log, sig.signal);
  const out = opts.out ? new JsonlWriter(opts.out) : undefined;
  const metricsQueue = new FairQueue(redis);
  const metrics = opts.metricsPort !== undefined ? new CrawlMetrics(metricsQueue, seed.arena) : undefined;
  if (metrics) {
    const port = await metrics.listen(opts.metricsPort ?? 0);
    log.info({ port }, `Prometheus metrics on http://0.0.0.0:${port}/metrics`);
  }
  try {
    const worker = new CrawlWorker(redis, seed, {
      ...(metrics ? { metrics } : {}),
      concurrency: opts.concurrency,
      leaseMs: opts.leaseMs,
      exitWhenDone: opts.exitWhenDone,
      logger: log,
      signal: sig.signal,
      progress: process.stderr.isTTY === true && !process.env.WEIR_NO_PROGRESS,
      ...(out ? { out } : {}),
    });
    const summary = await worker.run();
    const cpu = process.cpuUsage();
    log.info({ ...summary, cpuUserMs: Math.round(cpu.user / 1000), cpuSystemMs: Math.round(cpu.system / 1000) }, 'worker finished');
  } finally {
    await out?.close();
    await metrics?.close();
    await metricsQueue.close();
    redis.disconnect();
  }
  return sig.exitCode() ?? EXIT.ok;
}

async function cmdStatus(seedPath: string, url: string, opts: { json: boolean; watch: boolean }): Promise<number> {
  const seed = await loadSeedFile(seedPath);
  const redis = await connectRedis(url);
  const queue = new FairQueue(redis);
  try {
    for (;;) {
      const s = await crawlStatus(redis, seed.arena, queue);
      const text = opts.json ? JSON.stringify(s) : formatStatus(s);
      if (opts.watch && process.stdout.isTTY) process.stdout.write('\x1b[H\x1b[2J');
      process.stdout.write(`${text}\n`);
      if (!opts.watch) return EXIT.ok;
      await new Promise((r) => setTimeout(r, 1000));
    }
  } finally {
    await queue.close();
    redis.disconnect();
  }
}

async function withQueue<T>(url: string, fn: (redis: Redis, queue: FairQueue) => Promise<T>): Promise<T> {
  const redis = await connectRedis(url);
  const queue = new FairQueue(redis);
  try {
    return await fn(redis, queue);
  } finally {
    await queue.close();
    redis.disconnect();
  }
}

async function cmdDead(seedPath: string, url: string, opts: { requeue: boolean; json: boolean }): Promise<number> {
  const seed = await loadSeedFile(seedPath);
  return withQueue(url, async (_redis, queue) => {
    const items: DeadItem[] = [];
    for (let offset = 0; ; offset += 1000) {
      const page = await queue.dead(seed.arena, { offset, count: 1000 });
      items.push(...page);
      if (page.length < 1000) break;
    }
    const rows = items.map((d) => {
      let u = d.item;
      try {
        u = (JSON.parse(d.item) as { u?: string }).u ?? d.item;
      } catch {
        // not a crawl item: show it as it is
      }
      return { url: u, domain: d.queue, reason: d.reason, attempts: d.attempts, at: new Date(d.at).toISOString() };
    });
    if (opts.json) process.stdout.write(`${JSON.stringify(rows)}\n`);
    else if (rows.length === 0) process.stdout.write(`arena ${seed.arena}: the dead letter is empty\n`);
    else process.stdout.write(`${table(['url', 'domain', 'attempts', 'reason'], rows.map((r) => [r.url, r.domain, r.attempts, r.reason]))}\n`);
    if (opts.requeue && items.length > 0) {
      const n = await queue.requeueDead(seed.arena, items.length);
      process.stdout.write(`requeued ${n} URLs (start workers to crawl them)\n`);
    }
    return EXIT.ok;
  });
}

async function cmdHold(seedPath: string, url: string, hold: boolean, domain: string | undefined): Promise<number> {
  const seed = await loadSeedFile(seedPath);
  return withQueue(url, async (_redis, queue) => {
    if (domain !== undefined && seed.rateLimits[domain] === undefined) throw new UsageError(`${domain} is not a domain of ${seed.arena} (domains: ${Object.keys(seed.rateLimits).join(', ')})`);
    if (hold) await queue.hold(seed.arena, domain);
    else await queue.unhold(seed.arena, domain);
    process.stdout.write(`${hold ? 'held' : 'released the hold on'} ${domain ?? `the whole arena ${seed.arena}`}${hold ? ': no dequeues until unhold; leases out are untouched' : ''}\n`);
    return EXIT.ok;
  });
}

async function cmdClear(seedPath: string, url: string, yes: boolean): Promise<number> {
  const seed = await loadSeedFile(seedPath);
  if (!yes) throw new UsageError(`clear deletes every key of arena ${seed.arena}: add --yes to do it`);
  return withQueue(url, async (redis) => {
    const n = await clearArena(redis, seed.arena);
    process.stdout.write(`arena ${seed.arena}: deleted ${n} keys\n`);
    return EXIT.ok;
  });
}

export async function main(argv: string[]): Promise<number> {
  const log = makeLogger();
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        redis: { type: 'string' },
        concurrency: { type: 'string' },
        workers: { type: 'string' },
        out: { type: 'string' },
        'exit-when-done': { type: 'boolean', default: false },
        'lease-ms': { type: 'string' },
        'metrics-port': { type: 'string' },
        'redis-wait': { type: 'string' },
        json: { type: 'boolean', default: false },
        watch: { type: 'boolean', default: false },
        requeue: { type: 'boolean', default: false },
        yes: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
    const [command, seedPath, ...extra] = positionals;
    if (values.help || command === undefined || command === 'help') {
      process.stdout.write(`${USAGE}\n`);
      return command === undefined && !values.help ? EXIT.usage : EXIT.ok;
    }
    const [domainArg, ...rest] = extra;
    if (rest.length > 0 || (domainArg !== undefined && command !== 'hold' && command !== 'unhold')) throw new UsageError(`unexpected arguments: ${extra.join(' ')}`);
    if (command === 'redis-stop') {
      const stopped = await new EmbeddedRedis().stop();
      process.stdout.write(stopped ? 'embedded Redis stopped (its data stays in .weir/redis/)\n' : 'no embedded Redis is running here\n');
      return EXIT.ok;
    }
    if (command === 'demo') return await runDemo({ redisFlag: values.redis, workers: values.workers ? positiveInt('workers', values.workers, 2) : 2, log });
    if (!seedPath) throw new UsageError(`${command} needs a seed file: weir ${command} SEED`);
    // A broken seed file is reported before any Redis is looked for or started.
    await loadSeedFile(seedPath);
    const url = await pickRedis(values.redis, log);
    switch (command) {
      case 'kickoff':
        return await cmdKickoff(seedPath, url, log);
      case 'worker':
        return await cmdWorker(
          seedPath,
          url,
          {
            concurrency: positiveInt('concurrency', values.concurrency, WORKER_DEFAULTS.concurrency),
            leaseMs: positiveInt('lease-ms', values['lease-ms'], WORKER_DEFAULTS.leaseMs),
            redisWaitMs: (values['redis-wait'] === undefined ? 60 : nonNegative('redis-wait', values['redis-wait'])) * 1000,
            ...(values['metrics-port'] !== undefined ? { metricsPort: portNumber(values['metrics-port']) } : {}),
            ...(values.out ? { out: values.out } : {}),
            exitWhenDone: values['exit-when-done'],
          },
          log,
        );
      case 'crawl':
        return await runCrawl(
          seedPath,
          url,
          {
            workers: positiveInt('workers', values.workers, availableParallelism()),
            concurrency: positiveInt('concurrency', values.concurrency, WORKER_DEFAULTS.concurrency),
            progress: true,
            ...(values.out ? { out: values.out } : {}),
          },
          log,
        );
      case 'status':
        return await cmdStatus(seedPath, url, { json: values.json, watch: values.watch });
      case 'dead':
        return await cmdDead(seedPath, url, { requeue: values.requeue, json: values.json });
      case 'hold':
      case 'unhold':
        return await cmdHold(seedPath, url, command === 'hold', domainArg);
      case 'clear':
        return await cmdClear(seedPath, url, values.yes);
      default:
        throw new UsageError(`unknown command ${command} (try weir --help)`);
    }
  } catch (err) {
    const e = err as Error & { code?: string };
    process.stderr.write(`weir: ${e.message}\n`);
    if (err instanceof SeedError || err instanceof UsageError || e.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' || e.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' || e.code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') return EXIT.usage;
    if (err instanceof RedisUnreachableError) return EXIT.redis;
    if (process.env.WEIR_DEBUG) process.stderr.write(`${e.stack ?? ''}\n`);
    return EXIT.failure;
  }
}

function invokedDirectly(): boolean {
  try {
    return process.argv[1] !== undefined && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href;
  } catch {
    return false;
  }
}
if (invokedDirectly()) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`weir: ${String(err)}\n`);
      process.exit(EXIT.failure);
    },
  );
}
