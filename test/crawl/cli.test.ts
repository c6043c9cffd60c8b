/**
 * The weir command as a user runs it: worker processes, signals, exit codes.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { FairQueue } from '../../src/queue/index.js';
import { crawl } from '../../src/index.js';
import { CrawlLock } from '../../src/crawl/store/index.js';
import { freePort } from '../helpers/redis.js';
import { treeSite } from '../helpers/web.js';
import { useCrawlWorld } from '../helpers/world.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const PAGES = 60;

const world = useCrawlWorld('cli', async () => {
  // A tree of PAGES pages, each answering after 30 ms.
  await world.web.site('T', { '/robots.txt': 'User-agent: *\nAllow: /\n' }, treeSite(PAGES, 30));
});

function weir(args: string[], env: Record<string, string> = {}): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src/cli.ts'), ...args], {
    cwd: ROOT,
    env: { ...process.env, WEIR_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

async function run(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const p = weir(args, env);
  let stdout = '';
  let stderr = '';
  p.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
  p.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number | null>((r) => p.on('exit', (c) => r(c)));
  return { code, stdout, stderr };
}

async function writeSeed(arena: string): Promise<string> {
  const T = world.web.sites.get('T');
  assert.ok(T);
  const path = join(world.dir, `${arena}.yaml`);
  await writeFile(path, `arena: ${arena}\nrateLimits:\n  "${T.key}": 40\nstart:\n  - ${T.origin}/\nallowPrivateNetworks: true\nmaxInFlightPerDomain: 4\n`);
  return path;
}

/**
 * The spare workers whose parent is `pid` (from /proc): children started
 * with WEIR_SPARE_WORKER=1 in their environment. Not any child: tsx starts
 * esbuild's service as a child of the command whenever it compiles a
 * changed file, and a child forked but not yet exec'd has its parent's
 * environment, which lacks the variable.
 */
async function spareWorkers(pid: number): Promise<number[]> {
  const found: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    // Field 4 of /proc/N/stat, after the command name in parentheses, is the parent's pid.
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) !== pid) continue;
    const environ = await readFile(`/proc/${entry}/environ`, 'utf8').catch(() => '');
    if (environ.split('\0').includes('WEIR_SPARE_WORKER=1')) found.push(Number(entry));
  }
  return found;
}

/** Polls `done` every `everyMs` until it holds or 60 s have passed (the caller asserts what it waited for). */
async function until(done: () => boolean | Promise<boolean>, everyMs = 20): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!(await done()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, everyMs));
}

const exited = (p: ChildProcess): Promise<number | null> => new Promise((r) => (p.exitCode !== null ? r(p.exitCode) : p.on('exit', (c) => r(c))));

describe('weir CLI', () => {
  it('three worker processes, one SIGKILLed mid-crawl: the crawl completes with every page fetched', async () => {
    const seed = await writeSeed('killtest');
    const out = join(world.dir, 'kill.jsonl');
    const redisArgs = ['--redis', world.server.url];
    assert.equal((await run(['kickoff', seed, ...redisArgs])).code, 0);
    const workers = [0, 1, 2].map(() => weir(['worker', seed, ...redisArgs, '--exit-when-done', '--lease-ms', '1500', '--concurrency', '2', '--out', out]));
    // Kill one once the crawl is under way.
    const deadline = Date.now() + 20_000;
    while (world.web.of('T').length < 15 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    workers[0]?.kill('SIGKILL');
    const codes = await Promise.all(workers.map(exited));
    assert.equal(codes[1], 0);
    assert.equal(codes[2], 0);
    for (let n = 0; n < PAGES; n++) assert.ok(world.web.fetched('T', n === 0 ? '/' : `/p/${n}`) >= 1, `page ${n} fetched`);
    const q = new FairQueue(world.redis);
    const s = await q.stats('killtest');
    await q.close();
    assert.deepEqual([s.queued, s.leased, s.delayed, s.dead], [0, 0, 0, 0]);
    // Fetched more than once only if the killed worker held its lease or had
    // not yet committed it: at most two a lane (its lease, and the page before
    // whose commit was riding on its next call), 2 lanes.
    const paths = world.web.of('T').map((r) => r.path);
    const repeats = paths.length - new Set(paths).size;
    assert.ok(repeats <= 2 * 2, `${repeats} pages fetched twice`);
    const lines = (await readFile(out, 'utf8')).trim().split('\n');
    assert.ok(lines.length >= PAGES - 2, `${lines.length} output lines`);
  });

  it('SIGTERM hands the leases back and exits 143', async () => {
    const seed = await writeSeed('termtest');
    const redisArgs = ['--redis', world.server.url];
    assert.equal((await run(['kickoff', seed, ...redisArgs])).code, 0);
    const before = world.web.of('T').length;
    const w = weir(['worker', seed, ...redisArgs, '--concurrency', '4']);
    const deadline = Date.now() + 20_000;
    while (world.web.of('T').length < before + 10 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    w.kill('SIGTERM');
    assert.equal(await exited(w), 143);
    const q = new FairQueue(world.redis);
    const s = await q.stats('termtest');
    await q.close();
    assert.equal(s.leased, 0, 'no lease left behind');
    assert.ok(s.queued > 0, 'the rest is still queued for the next worker');
  });

  it('exit codes: 2 for a bad seed file (one readable line naming the field), 2 for bad usage, 3 for an unreachable Redis', async () => {
    const bad = join(world.dir, 'bad.yaml');
    await writeFile(bad, 'arena: ok\nrateLimits:\n  a.com: -1\nstart: [http://a.com/]\n');
    const r1 = await run(['kickoff', bad, '--redis', world.server.url]);
    assert.equal(r1.code, 2);
    assert.equal(r1.stderr.trim().split('\n').length, 1);
    assert.match(r1.stderr, /rateLimits\.a\.com/);
    assert.equal((await world.redis.keys('weir:{ok}:*')).length, 0, 'a broken seed writes nothing to Redis');
    const r2 = await run(['frobnicate', bad]);
    assert.equal(r2.code, 2);
    const r3 = await run(['kickoff', await writeSeed('nowhere'), '--redis', `redis://127.0.0.1:${await freePort()}`]);
    assert.equal(r3.code, 3);
    assert.match(r3.stderr, /cannot reach Redis/);
    assert.equal(r3.stderr.trim().split('\n').length, 1);
    const r4 = await run(['status', await writeSeed('termtest'), '--json', '--redis', world.server.url]);
    assert.equal(r4.code, 0);
    assert.equal((JSON.parse(r4.stdout) as { arena: string }).arena, 'termtest');
    // A domain that is not the seed's (even one named like an object's property) is bad usage.
    const r5 = await run(['hold', await writeSeed('holdtest'), 'toString', '--redis', world.server.url]);
    assert.equal(r5.code, 2);
    assert.match(r5.stderr, /toString is not a domain of holdtest/);
    // With perServer the queues are servers: a domain name is bad usage, saying what to hold instead.
    const perServer = join(world.dir, 'holdservers.yaml');
    await writeFile(perServer, `${await readFile(await writeSeed('holdservers'), 'utf8')}perServer: true\n`);
    const r5b = await run(['hold', perServer, 'a.test', '--redis', world.server.url]);
    assert.equal(r5b.code, 2);
    assert.match(r5b.stderr, /per server \(perServer\): hold a server's queue, @<address>/);
    const r6 = await run(['worker', await writeSeed('leasetest'), '--lease-ms', '40', '--redis', world.server.url]);
    assert.equal(r6.code, 2);
    assert.match(r6.stderr, /--lease-ms must be at least 1000/);
    const r7 = await run(['crawl', await writeSeed('warcflag'), '--warc-max-bytes', '5', '--redis', world.server.url]);
    assert.equal(r7.code, 2);
    assert.match(r7.stderr, /--warc-max-bytes needs --warc DIR/);
  });

  it('weir kickoff counts start URLs and listed sitemaps apart (already seen was start URLs minus both)', async () => {
    const T = world.web.sites.get('T');
    assert.ok(T);
    const path = join(world.dir, 'sitemaps-listed.yaml');
    await writeFile(path, `arena: listed\nrateLimits:\n  "${T.key}": 40\nstart:\n  - ${T.origin}/\n  - ${T.origin}/\nsitemaps:\n  - ${T.origin}/a.xml\n  - ${T.origin}/b.xml\nallowPrivateNetworks: true\n`);
    const first = await run(['kickoff', path, '--redis', world.server.url]);
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, /1 start URLs enqueued \(1 already seen\), 2 of 2 listed sitemaps\n$/);
    const again = await run(['kickoff', path, '--redis', world.server.url]);
    assert.match(again.stdout, /nothing new: every start URL was queued or seen before, 0 of 2 listed sitemaps\n$/);
  });

  it('weir crawl: kickoff, worker processes, a summary; run again on a drained arena, it says so', async () => {
    const seed = await writeSeed('crawlcmd');
    const out = join(world.dir, 'crawl.jsonl');
    const warc = join(world.dir, 'crawl-warc');
    const r = await run(['crawl', seed, '--workers', '2', '--out', out, '--warc', warc, '--warc-max-bytes', '20000', '--redis', world.server.url]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /crawl of crawlcmd finished/);
    assert.match(r.stdout, new RegExp(`total: ${PAGES} pages`));
    const lines = (await readFile(out, 'utf8')).trim().split('\n');
    assert.equal(lines.length, PAGES);
    // Each worker process that fetched anything writes its own WARC files (named by its pid; a
    // worker whose lanes found every slot taken by the other's writes none), rotated past
    // 20,000 bytes; every line points into one.
    const files = await readdir(warc);
    const writers = new Set(files.map((f) => f.split('-').at(-2)));
    assert.ok(writers.size >= 1 && writers.size <= 2, `one or two writers: ${files.join(' ')}`);
    assert.ok(files.length > 2, 'rotated');
    for (const l of lines) assert.ok(files.includes((JSON.parse(l) as { warc: { file: string } }).warc.file));
    const again = await run(['crawl', seed, '--workers', '2', '--redis', world.server.url]);
    assert.equal(again.code, 0);
    assert.match(again.stdout, /already drained/);
  });

  it('weir crawl starts its workers during the kickoff; they crawl only once it is done', async () => {
    const seed = await writeSeed('overlap');
    // Writes wait while Redis is paused, so the kickoff cannot finish until the test says.
    await world.redis.call('CLIENT', 'PAUSE', '60000', 'WRITE');
    let stderr = '';
    let p: ChildProcess | undefined;
    try {
      p = weir(['crawl', seed, '--workers', '2', '--redis', world.server.url], { WEIR_LOG_LEVEL: 'info' });
      p.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
      const deadline = Date.now() + 60_000;
      while ((stderr.match(/from REDIS_URL/g) ?? []).length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      assert.equal((stderr.match(/from REDIS_URL/g) ?? []).length, 2, `both workers up during the kickoff: ${stderr}`);
      assert.doesNotMatch(stderr, /kickoff done/);
    } finally {
      await world.redis.call('CLIENT', 'UNPAUSE');
    }
    const code = await exited(p);
    assert.equal(code, 0, stderr);
    // By the lines' own times, not their places in stderr: the command's
    // and its workers' lines share one pipe, and a worker's line written a
    // millisecond after the kickoff's was seen to come first in it.
    const at = (msg: RegExp): number[] => stderr.split('\n').filter((l) => msg.test(l)).map((l) => (JSON.parse(l) as { time: number }).time);
    const [kicked] = at(/"msg":"kickoff done/);
    const starting = at(/"msg":"worker starting"/);
    assert.ok(kicked !== undefined && starting.length === 2 && starting.every((t) => t >= kicked), stderr);
    for (let n = 0; n < PAGES; n++) assert.ok(world.web.fetched('T', n === 0 ? '/' : `/p/${n}`) >= 1, `page ${n} fetched`);
  });

  it('weir crawl whose kickoff fails (the arena busy) stops the workers it started, crawling nothing', async () => {
    const seed = await writeSeed('busy');
    const fetchedBefore = world.web.of('T').length;
    const lock = await CrawlLock.acquire(world.redis, new FairQueue(world.redis), 'busy');
    try {
      const r = await run(['crawl', seed, '--workers', '2', '--redis', world.server.url], { WEIR_LOG_LEVEL: 'info' });
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, /arena busy is being crawled by/);
      assert.equal((r.stderr.match(/from REDIS_URL/g) ?? []).length, 2, 'the workers were started');
      assert.doesNotMatch(r.stderr, /worker starting/);
      assert.equal(world.web.of('T').length, fetchedBefore, 'nothing fetched');
    } finally {
      await lock.release();
    }
  });

  it('weir crawl starts its first worker at its entry, before it has read its seed; a crawl that fails early leaves none behind', async () => {
    const path = join(world.dir, 'spare.yaml');
    const text = await readFile(await writeSeed('spare'), 'utf8');
    await rm(path, { force: true });
    execFileSync('mkfifo', [path]);
    // The seed is a FIFO: the command cannot read it (nor learn anything from it) until the test writes it.
    let stderr = '';
    const p = weir(['crawl', path, '--redis', world.server.url], { WEIR_LOG_LEVEL: 'info' });
    p.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    let early: number[] = [];
    await until(async () => (early = await spareWorkers(p.pid as number)).length > 0);
    assert.equal(early.length, 1, 'one worker process started before the seed was read');
    // Each reader in turn: the command (it says which Redis once it has read the seed), then its worker.
    await writeFile(path, text);
    await until(() => /from --redis/.test(stderr));
    await writeFile(path, text);
    assert.equal(await exited(p), 0, stderr);
    const starting = [...stderr.matchAll(/"pid":(\d+)[^\n]*worker starting/g)].map((m) => Number(m[1]));
    assert.deepEqual(starting, early, `the early process is the crawl's worker: ${stderr}`);
    for (let n = 0; n < PAGES; n++) assert.ok(world.web.fetched('T', n === 0 ? '/' : `/p/${n}`) >= 1, `page ${n} fetched`);

    // A broken seed: the command says so and exits; its early worker leaves with it, having done nothing.
    const bad = join(world.dir, 'spare-bad.yaml');
    await writeFile(bad, 'arena: sparebad\nrateLimits:\n  a.com: -1\nstart: [http://a.com/]\n');
    const q = weir(['crawl', bad, '--redis', world.server.url]);
    let seen: number[] = [];
    await until(async () => (seen = await spareWorkers(q.pid as number)).length > 0 || q.exitCode !== null, 10);
    assert.equal(await exited(q), 2);
    assert.equal(seen.length, 1, 'the early worker was started');
    await until(() => !existsSync(`/proc/${seen[0]}`));
    assert.ok(!existsSync(`/proc/${seen[0]}`), 'the early worker left with the command');
    assert.equal((await world.redis.keys('weir:{sparebad}:*')).length, 0, 'nothing written');
  });

  it("a spare worker given its run message and its start word before it listens for either still hears the word (a fast kickoff and a slow spare: it hung)", async () => {
    const path = await writeSeed('sparewords');
    const k = await run(['kickoff', path, '--redis', world.server.url]);
    assert.equal(k.code, 0, k.stderr);
    for (const word of ['stop', 'go'] as const) {
      // The spare as `weir crawl` starts it, both of the command's messages sent at once, long before the spare has loaded.
      const spare = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src/cli.ts')], {
        cwd: ROOT,
        env: { ...process.env, WEIR_LOG_LEVEL: 'warn', WEIR_SPARE_WORKER: '1' },
        stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      });
      let out = '';
      spare.stderr?.on('data', (d: Buffer) => (out += d.toString()));
      spare.send({ weirSpare: 'run', argv: ['worker', path, '--exit-when-done'], env: { REDIS_URL: world.server.url, WEIR_AWAIT_KICKOFF: '1', WEIR_NO_PROGRESS: '1' } });
      spare.send({ weir: word });
      const hung = setTimeout(() => spare.kill('SIGKILL'), 60_000);
      const code = await exited(spare);
      clearTimeout(hung);
      assert.equal(code, 0, `after '${word}' the spare ends by itself (killed after 60 s otherwise): ${out}`);
    }
  });

  it('the programmatic API: crawl() with an onPage hook that reads the page with cheerio and adds URLs', async () => {
    const T = world.web.sites.get('T');
    assert.ok(T);
    const h1s: string[] = [];
    const result = await crawl(
      { arena: 'apitest', rateLimits: { [T.key]: 'unlimited' }, start: [`${T.origin}/`], allowPrivateNetworks: true, maxDepth: 2 },
      {
        redis: world.server.url,
        workers: 2,
        concurrency: 2,
        onPage: async ({ url, $ }) => {
          const doc = await $();
          h1s.push(doc('title').text());
          return url.endsWith('/') ? ['/p/999'] : [];
        },
      },
    );
    assert.equal(result.kickoff.enqueued, 1);
    // depth 0..2 of the tree: 1 + 2 + 4 pages, plus the hook's extra URL (a 404, not a page with a title)
    assert.equal(result.stats.totals.pages, 8);
    assert.equal(h1s.length, 7);
    assert.ok(h1s.every((t) => t === 'fixture'));
    assert.equal(world.web.fetched('T', '/p/999'), 1);
  });

  it('operator commands: dead (list, --requeue), hold/unhold, clear (--yes required)', async () => {
    const seed = await writeSeed('ops');
    const redisArgs = ['--redis', world.server.url];
    assert.equal((await run(['kickoff', seed, ...redisArgs])).code, 0);
    const q = new FairQueue(world.redis);
    try {
      const r = await q.dequeue('ops');
      assert.ok(r.lease);
      await q.fail(r.lease, 'gave up: HTTP 500');
      const listed = await run(['dead', seed, '--json', ...redisArgs]);
      assert.equal(listed.code, 0, listed.stderr);
      const rows = JSON.parse(listed.stdout) as { url: string; reason: string }[];
      assert.equal(rows.length, 1);
      assert.match(rows[0]?.url ?? '', /^http:\/\/127\.0\.0\.1:\d+\/$/);
      assert.equal(rows[0]?.reason, 'gave up: HTTP 500');
      // A page at a time, with the count of all: a dead letter of millions is never read whole.
      assert.match((await run(['dead', seed, '--limit', '10', ...redisArgs])).stdout, /dead letter 1-1 of 1\n/);
      assert.match((await run(['dead', seed, '--offset', '1', ...redisArgs])).stdout, /dead letter none at offset 1 of 1\n/);
      assert.equal((await run(['dead', seed, '--limit', '5000', ...redisArgs])).code, 2);
      const requeued = await run(['dead', seed, '--requeue', ...redisArgs]);
      assert.match(requeued.stdout, /requeued 1 URLs/);
      assert.equal((await q.stats('ops')).queued, 1);

      const T = world.web.sites.get('T');
      assert.ok(T);
      assert.equal((await run(['hold', seed, T.key, ...redisArgs])).code, 0);
      assert.equal((await q.dequeue('ops')).lease, null, 'held: nothing to dequeue');
      assert.equal((await run(['hold', seed, 'not-a-domain.example', ...redisArgs])).code, 2);
      assert.equal((await run(['unhold', seed, T.key, ...redisArgs])).code, 0);
      const again = await q.dequeue('ops');
      assert.ok(again.lease, 'unheld: served again');
      await q.release(again.lease);

      assert.equal((await run(['clear', seed, ...redisArgs])).code, 2, 'clear needs --yes');
      const cleared = await run(['clear', seed, '--yes', ...redisArgs]);
      assert.equal(cleared.code, 0, cleared.stderr);
      assert.equal((await world.redis.keys('weir:{ops}:*')).length, 0);
    } finally {
      await q.close();
    }
  });
});
