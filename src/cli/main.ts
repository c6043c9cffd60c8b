import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { loadSeedFile, type Seed } from '../crawl/seed/index.js';
import { LIMITS } from '../queue/index.js';
import { WORKER_DEFAULTS } from '../crawl/worker-options.js';
import { EmbeddedRedis } from '../embedded-redis.js';
import type { CommandContext } from './context.js';
import { EXIT, exitCodeOf } from './exit.js';
import { logFormat, makeLogger } from './log.js';
import { pickRedis } from './redis.js';
import type { StatusFlags } from './status.js';
import type { WorkerFlags } from './worker.js';
import type { StatsView } from '../crawl/counters/index.js';
import { leaseMs, nonNegative, portNumber, positiveInt, USAGE, UsageError } from './usage.js';
import { WARC_DEFAULTS } from '../crawl/output/index.js';
// The limits' own module: the counters' index loads the stats reader too, some 60 ms for every command.
// eslint-disable-next-line no-restricted-imports
import { METRICS_LIMITS } from '../crawl/counters/metrics-limits.js';

const OPTIONS = {
  redis: { type: 'string' },
  concurrency: { type: 'string' },
  workers: { type: 'string' },
  out: { type: 'string' },
  warc: { type: 'string' },
  'warc-max-bytes': { type: 'string' },
  'exit-when-done': { type: 'boolean', default: false },
  'lease-ms': { type: 'string' },
  'metrics-port': { type: 'string' },
  'metrics-host': { type: 'string' },
  'metrics-top': { type: 'string' },
  'metrics-domain': { type: 'string', multiple: true },
  'cluster-nodes': { type: 'string' },
  'redis-wait': { type: 'string' },
  'log-format': { type: 'string' },
  json: { type: 'boolean', default: false },
  watch: { type: 'boolean', default: false },
  serve: { type: 'string' },
  host: { type: 'string' },
  top: { type: 'string' },
  by: { type: 'string' },
  domain: { type: 'string', multiple: true },
  requeue: { type: 'boolean', default: false },
  offset: { type: 'string' },
  limit: { type: 'string' },
  yes: { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
} as const;

type Values = ReturnType<typeof parseArgs<{ args: string[]; options: typeof OPTIONS; allowPositionals: true }>>['values'];

/** Parses the command line and runs the command; resolves the exit code. A failure is one line on stderr. */
export async function main(argv: string[]): Promise<number> {
  try {
    const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, strict: true, options: OPTIONS });
    const [command, seedPath, ...extra] = positionals;
    if (values.help || command === undefined || command === 'help') {
      process.stdout.write(`${USAGE}\n`);
      return command === undefined && !values.help ? EXIT.usage : EXIT.ok;
    }
    const [domainArg, ...rest] = extra;
    if (rest.length > 0 || (domainArg !== undefined && command !== 'hold' && command !== 'unhold')) throw new UsageError(`unexpected arguments: ${extra.join(' ')}`);
    const format = logFormat(values['log-format']);
    // Read by connectRedis wherever it is called, and inherited by crawl's workers.
    if (values['cluster-nodes'] !== undefined) {
      if (values['cluster-nodes'].trim() === '') throw new UsageError('--cluster-nodes needs host:port[,host:port...]');
      process.env.WEIR_CLUSTER_NODES = values['cluster-nodes'];
    }
    const log = makeLogger(format);
    if (command === 'redis-stop') {
      const stopped = await new EmbeddedRedis().stop();
      process.stdout.write(stopped ? 'embedded Redis stopped (its data stays in .weir/redis/)\n' : 'no embedded Redis is running here\n');
      return EXIT.ok;
    }
    if (command === 'demo') return await (await import('./demo.js')).cmdDemo({ redisFlag: values.redis, workers: positiveInt('workers', values.workers, 2), log, logFormat: format });
    if (!KNOWN.has(command)) throw new UsageError(`unknown command ${command} (try weir --help)`);
    if (!seedPath) throw new UsageError(`${command} needs a seed file: weir ${command} SEED`);
    // The seed is read once, and a broken one is reported before any Redis is looked for or started.
    const seed = await loadSeedFile(seedPath);
    const redis = await pickRedis(values.redis);
    log.info({ source: redis.source }, redis.said);
    return await dispatch(command, { seedPath, seed, url: redis.url, log }, values, domainArg);
  } catch (err) {
    const e = err as Error;
    process.stderr.write(`weir: ${e.message}\n`);
    if (process.env.WEIR_DEBUG) process.stderr.write(`${e.stack ?? ''}\n`);
    return exitCodeOf(err);
  }
}

/**
 * `weir crawl`'s default worker count: one per core, but no more than the
 * crawl can keep busy. Its fetches in flight are at most its domains (each
 * rateLimits key is one queue) × maxInFlightPerDomain; a worker beyond the
 * lanes those fill only costs a process's start-up and a JIT of its own
 * (one origin: 1.45× the CPU per page with 2 workers as with 1, no faster).
 */
export function workersToFill(seed: Pick<Seed, 'rateLimits' | 'maxInFlightPerDomain'> & Partial<Pick<Seed, 'otherDomains' | 'domainFiles' | 'defaultRate'>>, concurrency: number, cores: number): number {
  // (A crawl that follows other domains, or lists its domains in files, may have any number: one worker per core.)
  if (seed.otherDomains || (seed.domainFiles?.length ?? 0) > 0 || (seed.defaultRate ?? null) !== null) return Math.max(1, cores);
  const inFlight = Object.keys(seed.rateLimits).length * seed.maxInFlightPerDomain;
  return Math.max(1, Math.min(cores, Math.ceil(inFlight / concurrency)));
}

/** --metrics-port P [--metrics-host H] [--metrics-top N] [--metrics-domain D,...]: the endpoint, and which domains get series. */
function metricsFlags(values: Values): Pick<WorkerFlags, 'metrics'> {
  const port = values['metrics-port'];
  const host = values['metrics-host'];
  const top = values['metrics-top'];
  const named = values['metrics-domain']?.flatMap((v) => v.split(',')).map((d) => d.trim()).filter((d) => d !== '');
  if (port === undefined) {
    if (host !== undefined || top !== undefined || named !== undefined) throw new UsageError('--metrics-host, --metrics-top and --metrics-domain need --metrics-port P');
    return {};
  }
  if (host !== undefined && host.trim() === '') throw new UsageError('--metrics-host needs an address, like 127.0.0.1 or 0.0.0.0');
  const n = top === undefined ? METRICS_LIMITS.maxDomains : Number(top);
  if (!/^\d+$/.test(top ?? '0') || n > METRICS_LIMITS.maxDomains) throw new UsageError(`--metrics-top must be a whole number from 0 to ${METRICS_LIMITS.maxDomains}, got ${top}`);
  if (named !== undefined && named.length === 0) throw new UsageError('--metrics-domain needs a domain, like example.com (or several, comma-separated)');
  if (named !== undefined && new Set(named).size > METRICS_LIMITS.maxNamedDomains) throw new UsageError(`--metrics-domain: at most ${METRICS_LIMITS.maxNamedDomains} domains`);
  return { metrics: { port: portNumber(port, 'metrics-port'), host: host ?? '127.0.0.1', domains: { top: n, ...(named ? { named } : {}) } } };
}

/** --warc DIR [--warc-max-bytes N]. */
function warcFlag(values: Values): { warc?: { dir: string; maxBytes: number } } {
  if (values.warc === undefined) {
    if (values['warc-max-bytes'] !== undefined) throw new UsageError('--warc-max-bytes needs --warc DIR');
    return {};
  }
  if (values.warc.trim() === '') throw new UsageError('--warc needs a directory');
  return { warc: { dir: values.warc, maxBytes: positiveInt('warc-max-bytes', values['warc-max-bytes'], WARC_DEFAULTS.maxBytes) } };
}

/** status's flags: --serve PORT [--host H] alone, or --json/--watch. */
function statusFlags(values: Values): StatusFlags {
  if (values.serve === undefined) {
    if (values.host !== undefined) throw new UsageError('--host needs --serve PORT');
    return { json: values.json, watch: values.watch, host: '127.0.0.1', view: statusView(values) };
  }
  if (values.json || values.watch) throw new UsageError('--serve serves the page (its JSON is at /api/status): not with --json or --watch');
  if (values.top !== undefined || values.by !== undefined || values.domain !== undefined || values.offset !== undefined) throw new UsageError('--top, --offset, --by and --domain are for the table: the page has its own views');
  const host = values.host ?? '127.0.0.1';
  if (host.trim() === '') throw new UsageError('--host needs an address, like 127.0.0.1 or 0.0.0.0');
  return { json: false, watch: false, serve: portNumber(values.serve, 'serve'), host };
}

/** status's rows: --top N [--offset K] [--by backlog|waiting|errors], or --domain D (repeatable). */
function statusView(values: Values): StatsView {
  const by = values.by;
  if (by !== undefined && by !== 'backlog' && by !== 'waiting' && by !== 'errors') throw new UsageError(`--by must be backlog, waiting or errors, got ${by}`);
  const top = values.top === undefined ? undefined : positiveInt('top', values.top, 50);
  if (top !== undefined && top > 500) throw new UsageError(`--top must be at most 500, got ${top}`);
  const offset = values.offset === undefined ? undefined : offsetFlag(values.offset);
  if (values.domain !== undefined) {
    if (top !== undefined || by !== undefined || offset !== undefined) throw new UsageError('--domain shows the domains named: not with --top, --offset or --by');
    if (values.domain.length > 500) throw new UsageError('--domain: at most 500 domains');
    return { domains: values.domain };
  }
  if (offset !== undefined && offset + (top ?? 50) > LIMITS.maxStatsRank) throw new UsageError(`--offset: pages end within the first ${LIMITS.maxStatsRank.toLocaleString('en-US')} rows (--offset + --top ≤ ${LIMITS.maxStatsRank}); --domain D shows any domain`);
  const paged = by !== undefined || top !== undefined || offset !== undefined;
  return { ...(paged ? { by: by ?? 'backlog' } : {}), ...(top === undefined ? {} : { count: top }), ...(offset ? { offset } : {}) };
}

function offsetFlag(text: string): number {
  const offset = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(offset)) throw new UsageError(`--offset must be a whole number ≥ 0, got ${text}`);
  return offset;
}

/** dead's page: --offset N (default 0), --limit N (default 100, at most 1,000). */
function deadPage(values: Values): { offset: number; limit: number } {
  const offset = values.offset === undefined ? 0 : offsetFlag(values.offset);
  const limit = positiveInt('limit', values.limit, 100);
  if (limit > 1000) throw new UsageError(`--limit must be at most 1000, got ${limit}`);
  return { offset, limit };
}

const KNOWN = new Set(['kickoff', 'worker', 'crawl', 'status', 'dead', 'hold', 'unhold', 'clear']);

/**
 * Runs one command, its module loaded only now: a process loads what its
 * command needs (kickoff and status never load the HTTP client, the HTML
 * parser or the archive writer), which is most of a short command's CPU.
 */
async function dispatch(command: string, ctx: CommandContext, values: Values, domainArg: string | undefined): Promise<number> {
  switch (command) {
    case 'kickoff':
      return (await import('./kickoff.js')).cmdKickoff(ctx);
    case 'worker':
      return (await import('./worker.js')).cmdWorker(ctx, {
        concurrency: positiveInt('concurrency', values.concurrency, WORKER_DEFAULTS.concurrency),
        leaseMs: leaseMs(values['lease-ms']),
        redisWaitMs: (values['redis-wait'] === undefined ? 60 : nonNegative('redis-wait', values['redis-wait'])) * 1000,
        ...metricsFlags(values),
        ...(values.out ? { out: values.out } : {}),
        ...warcFlag(values),
        exitWhenDone: values['exit-when-done'],
      });
    case 'crawl': {
      const concurrency = positiveInt('concurrency', values.concurrency, WORKER_DEFAULTS.concurrency);
      return (await import('./crawl.js')).cmdCrawl(ctx, {
        workers: positiveInt('workers', values.workers, workersToFill(ctx.seed, concurrency, availableParallelism())),
        concurrency,
        ...(values.out ? { out: values.out } : {}),
        ...warcFlag(values),
        ...(values['log-format'] ? { workerArgs: ['--log-format', values['log-format']] } : {}),
      });
    }
    case 'status':
      return (await import('./status.js')).cmdStatus(ctx, statusFlags(values));
    case 'dead':
      return (await import('./dead.js')).cmdDead(ctx, { requeue: values.requeue, json: values.json, ...deadPage(values) });
    case 'hold':
    case 'unhold':
      return (await import('./hold.js')).cmdHold(ctx, command === 'hold', domainArg);
    default:
      return (await import('./clear.js')).cmdClear(ctx, values.yes);
  }
}
