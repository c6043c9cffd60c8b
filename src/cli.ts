#!/usr/bin/env node
import { spawn } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { availableParallelism } from 'node:os';
import { isDeepStrictEqual, parseArgs } from 'node:util';
import { pino, type Logger } from 'pino';
import type { Redis } from 'ioredis';
import { FairQueue, WeirError } from './queue/index.js';
import { kickoff } from './crawl/kickoff.js';
import { crawlKeys } from './crawl/keys.js';
import { JsonlWriter } from './crawl/output.js';
import { loadSeedFile, SeedError, validateSeed, type Seed } from './crawl/seed.js';
import { crawlStatus, formatStatus, table } from './crawl/status.js';
import { CrawlWorker, WORKER_DEFAULTS } from './crawl/worker.js';
import { connectRedis, redactRedisUrl, RedisUnreachableError } from './redis.js';

/** Documented exit codes. */
export const EXIT = { ok: 0, failure: 1, usage: 2, redis: 3, sigint: 130, sigterm: 143 } as const;

const USAGE = `weir — a polite, horizontally scalable web crawler

usage:
  weir kickoff SEED                      store the seed, set limits, enqueue the start URLs
  weir worker SEED [--concurrency N] [--out FILE.jsonl] [--exit-when-done]
  weir crawl SEED [--workers N] [--concurrency N] [--out FILE.jsonl]
  weir status SEED [--json] [--watch]

options:
  --redis URL        Redis to use (else REDIS_URL, else redis://127.0.0.1:6379)
  --concurrency N    fetches in flight in one worker (default ${WORKER_DEFAULTS.concurrency})
  --workers N        worker processes for crawl (default: CPU cores)
  --out FILE         one JSON line per URL (crawl truncates it, worker appends)
  --exit-when-done   exit when the arena is drained or maxPages is reached
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

function redisUrl(flag: string | undefined): string {
  return flag ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
}

function positiveInt(name: string, v: string | undefined, fallback: number): number {
  if (v === undefined) return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`--${name} must be a whole number ≥ 1, got ${v}`);
  return n;
}

/** Waits for the seed kickoff stored in the arena; returns it. */
async function storedSeed(redis: Redis, seed: Seed, log: Logger, signal: AbortSignal): Promise<Seed> {
  const key = crawlKeys(seed.arena).seed;
  let warned = false;
  while (!signal.aborted) {
    const raw = await redis.get(key);
    if (raw) {
      const stored = validateSeed(JSON.parse(raw));
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
  try {
    const r = await kickoff(redis, seed);
    log.info({ arena: seed.arena, ...r }, 'kickoff done');
    process.stdout.write(`arena ${seed.arena}: ${Object.keys(seed.rateLimits).length} domains, ${r.enqueued} start URLs enqueued (${seed.start.length - r.enqueued} already seen)\n`);
    return EXIT.ok;
  } finally {
    redis.disconnect();
  }
}

async function cmdWorker(seedPath: string, url: string, opts: { concurrency: number; out?: string; exitWhenDone: boolean; leaseMs: number }, log: Logger): Promise<number> {
  const local = await loadSeedFile(seedPath);
  const sig = trapSignals(log);
  const redis = await connectRedis(url, { onReconnect: (attempt, delayMs) => log.warn({ attempt, delayMs }, 'Redis connection lost: reconnecting') });
  log.info({ redis: redactRedisUrl(url), arena: local.arena }, 'worker starting');
  const seed = await storedSeed(redis, local, log, sig.signal);
  const out = opts.out ? new JsonlWriter(opts.out) : undefined;
  try {
    const worker = new CrawlWorker(redis, seed, {
      concurrency: opts.concurrency,
      leaseMs: opts.leaseMs,
      exitWhenDone: opts.exitWhenDone,
      logger: log,
      signal: sig.signal,
      progress: process.stderr.isTTY === true,
      ...(out ? { out } : {}),
    });
    const summary = await worker.run();
    const cpu = process.cpuUsage();
    log.info({ ...summary, cpuUserMs: Math.round(cpu.user / 1000), cpuSystemMs: Math.round(cpu.system / 1000) }, 'worker finished');
  } finally {
    await out?.close();
    redis.disconnect();
  }
  return sig.exitCode() ?? EXIT.ok;
}

async function cmdCrawl(seedPath: string, url: string, opts: { workers: number; concurrency: number; out?: string }, log: Logger): Promise<number> {
  const seed = await loadSeedFile(seedPath);
  const redis = await connectRedis(url);
  const queue = new FairQueue(redis);
  const startedAt = Date.now();
  try {
    const before = await queue.stats(seed.arena);
    const r = await kickoff(redis, seed, queue);
    log.info({ arena: seed.arena, ...r, workers: opts.workers }, 'kickoff done; starting workers');
    if (before.exists && r.enqueued === 0 && (await queue.stats(seed.arena)).drained) {
      process.stdout.write(`arena ${seed.arena} is already drained: nothing to crawl. Run \`weir clear ${seedPath} --yes\` (or use another arena) to crawl again.\n`);
      return EXIT.ok;
    }
    if (opts.out) await new JsonlWriter(opts.out, { truncate: true }).close();
    const args = ['worker', seedPath, '--exit-when-done', '--concurrency', String(opts.concurrency), ...(opts.out ? ['--out', opts.out] : [])];
    // The Redis URL goes by environment, not argv: a password would show in `ps`.
    const children = Array.from({ length: opts.workers }, () =>
      spawn(process.execPath, [...process.execArgv, process.argv[1] as string, ...args], {
        stdio: ['ignore', 'inherit', 'inherit'],
        env: { ...process.env, REDIS_URL: url },
      }),
    );
    let stopping = false;
    const forward = (s: NodeJS.Signals) => () => {
      stopping = true;
      for (const c of children) c.kill(s);
    };
    process.on('SIGINT', forward('SIGINT'));
    process.on('SIGTERM', forward('SIGTERM'));
    const codes = await Promise.all(children.map((c) => new Promise<number>((res) => c.on('exit', (code, signal) => res(code ?? (signal ? 128 : 1))))));
    const status = await crawlStatus(redis, seed.arena, queue);
    const wall = (Date.now() - startedAt) / 1000;
    const rows = status.domains.map((d) => [
      d.domain,
      d.pages,
      d.failed,
      d.robotsBlocked,
      d.dead,
      d.rateLimit === 'unlimited' ? 'unlimited' : `${d.rateLimit}/s`,
      `${d.achievedRate.toFixed(2)}/s`,
    ]);
    process.stdout.write(`\ncrawl of ${seed.arena} finished in ${wall.toFixed(1)} s with ${opts.workers} workers\n`);
    process.stdout.write(`${table(['domain', 'pages', 'errors', 'robots', 'dead', 'limit', 'achieved'], rows)}\n`);
    process.stdout.write(`total: ${status.totals.pages} pages, ${status.totals.errors} errors, ${status.totals.dead} dead-lettered, ${status.totals.queued} still queued${opts.out ? `; output in ${opts.out}` : ''}\n`);
    if (stopping) return codes.find((c) => c === EXIT.sigint || c === EXIT.sigterm) ?? EXIT.sigint;
    return codes.every((c) => c === 0) ? EXIT.ok : EXIT.failure;
  } finally {
    await queue.close();
    redis.disconnect();
  }
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
        json: { type: 'boolean', default: false },
        watch: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
    const [command, seedPath, ...extra] = positionals;
    if (values.help || command === undefined || command === 'help') {
      process.stdout.write(`${USAGE}\n`);
      return command === undefined && !values.help ? EXIT.usage : EXIT.ok;
    }
    if (extra.length > 0) throw new UsageError(`unexpected arguments: ${extra.join(' ')}`);
    if (!seedPath) throw new UsageError(`${command} needs a seed file: weir ${command} SEED`);
    const url = redisUrl(values.redis);
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
            ...(values.out ? { out: values.out } : {}),
            exitWhenDone: values['exit-when-done'],
          },
          log,
        );
      case 'crawl':
        return await cmdCrawl(
          seedPath,
          url,
          {
            workers: positiveInt('workers', values.workers, availableParallelism()),
            concurrency: positiveInt('concurrency', values.concurrency, WORKER_DEFAULTS.concurrency),
            ...(values.out ? { out: values.out } : {}),
          },
          log,
        );
      case 'status':
        return await cmdStatus(seedPath, url, { json: values.json, watch: values.watch });
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
