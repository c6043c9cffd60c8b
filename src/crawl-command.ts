import { spawn } from 'node:child_process';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { kickoff } from './crawl/kickoff.js';
import { JsonlWriter } from './crawl/output.js';
import { loadSeedFile, type Seed } from './crawl/seed.js';
import { crawlStatus, table } from './crawl/status.js';
import { chooseRedis } from './embedded-redis.js';
import { FairQueue } from './queue/index.js';
import { connectRedis, redactRedisUrl } from './redis.js';

/** Documented exit codes. */
export const EXIT = { ok: 0, failure: 1, usage: 2, redis: 3, sigint: 130, sigterm: 143 } as const;

/** Picks the Redis (flag, REDIS_URL, the default address, else the embedded one) and says which. */
export async function pickRedis(flag: string | undefined, log: Logger, say?: (line: string) => void): Promise<string> {
  const choice = await chooseRedis(flag);
  const where = redactRedisUrl(choice.url);
  const how = {
    flag: 'from --redis',
    env: 'from REDIS_URL',
    default: 'at the default address',
    'embedded-running': 'embedded, already running (data in .weir/redis/)',
    'embedded-started': 'embedded, started now (data in .weir/redis/, AOF on)',
  }[choice.source];
  log.info({ redis: where, source: choice.source }, `using Redis ${where} (${how})`);
  say?.(`using Redis ${where} (${how})`);
  return choice.url;
}

/** A queue must not be evicted: say so when Redis would. */
export async function warnEviction(redis: Redis, log: Logger): Promise<void> {
  try {
    const r = (await redis.config('GET', 'maxmemory-policy')) as string[];
    if (r[1] && r[1] !== 'noeviction') log.warn({ policy: r[1] }, `Redis maxmemory-policy is ${r[1]}: under memory pressure it may evict queued URLs; set it to noeviction`);
  } catch {
    // CONFIG may be disabled (managed Redis): nothing to check.
  }
}


export async function runCrawl(
  seedPath: string,
  url: string,
  opts: { workers: number; concurrency: number; out?: string; progress?: boolean; seed?: Seed },
  log: Logger,
): Promise<number> {
  const seed = opts.seed ?? (await loadSeedFile(seedPath));
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
        env: { ...process.env, REDIS_URL: url, WEIR_NO_PROGRESS: '1' },
      }),
    );
    let stopping = false;
    const forward = (s: NodeJS.Signals) => () => {
      stopping = true;
      for (const c of children) c.kill(s);
    };
    process.on('SIGINT', forward('SIGINT'));
    process.on('SIGTERM', forward('SIGTERM'));
    const ticker = opts.progress ? showProgress(redis, queue, seed.arena, startedAt) : undefined;
    const codes = await Promise.all(children.map((c) => new Promise<number>((res) => c.on('exit', (code, signal) => res(code ?? (signal ? 128 : 1))))));
    if (ticker) clearInterval(ticker);
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


/** The crawl's progress, from Redis: redrawn in place on a terminal, a line every 2 s otherwise. */
function showProgress(redis: Redis, queue: FairQueue, arena: string, startedAt: number): NodeJS.Timeout {
  const tty = process.stdout.isTTY === true;
  let last = { at: Date.now(), pages: 0 };
  return setInterval(
    () => {
      void crawlStatus(redis, arena, queue).then(
        (s) => {
          const now = Date.now();
          const rate = ((s.totals.pages - last.pages) * 1000) / Math.max(1, now - last.at);
          last = { at: now, pages: s.totals.pages };
          const line = `[${((now - startedAt) / 1000).toFixed(0)} s] ${s.totals.pages} pages (${rate.toFixed(1)}/s), ${s.totals.queued} queued, ${s.totals.leased} in flight, ${s.totals.delayed} waiting to retry, ${s.totals.errors} errors`;
          process.stdout.write(tty ? `\r\x1b[2K${line}` : `${line}\n`);
        },
        () => undefined,
      );
    },
    tty ? 1000 : 2000,
  );
}
