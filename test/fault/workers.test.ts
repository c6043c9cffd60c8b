/**
 * Workers killed at random mid-crawl, and workers whose clocks run minutes
 * off: the crawl completes, and every rate limit holds (only Redis time is used).
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdir, writeFile } from 'node:fs/promises';
import { setPriority } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { FairQueue } from '../../src/queue/index.js';
import { crawlKeys } from '../../src/crawl/store/keys.js';
import { kickoff } from '../../src/crawl/kickoff.js';
import { validateSeed } from '../../src/crawl/seed/seed.js';
import { closestPair, html, requestTimes, smallestGap, treeSite } from '../helpers/web.js';
import { httpMessage, readWarcFile, sha1Base32 } from '../helpers/warc-reader.js';
import { cliBundle } from '../helpers/cli-bundle.js';
import { TreeWeb } from '../helpers/tree-web.js';
import { useCrawlWorld } from '../helpers/world.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const PAGES = 200;

const world = useCrawlWorld('workers', async () => {
  await world.web.site('S', { '/robots.txt': 'User-agent: *\nAllow: /\n' }, treeSite(PAGES));
});

const exited = (p: ChildProcess): Promise<number | null> => new Promise((r) => (p.exitCode !== null || p.signalCode !== null ? r(p.exitCode) : p.on('exit', (c) => r(c))));

describe("a killed worker's URLs", () => {
  it('come back within the default lease (10 s) of the kill, to a live worker', async (t) => {
    const N = 4;
    const answered = new Set<string>();
    const seen: { path: string; at: number }[] = [];
    // The first request for each URL never answers: the first worker holds them all when it dies.
    const site = await world.web.site('K', { '/robots.txt': 'User-agent: *\nAllow: /\n', '/': html(Array.from({ length: N }, (_, i) => `<a href="/k/${i}">${i}</a>`).join('')) }, (req, res) => {
      const path = req.url ?? '';
      seen.push({ path, at: performance.now() });
      if (!answered.has(path) && seen.filter((r) => r.path === path).length === 1) return;
      answered.add(path);
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(html('ok'));
    });
    const seedPath = join(world.dir, 'killed.yaml');
    await writeFile(seedPath, `arena: killed\nrateLimits:\n  "${site.key}": unlimited\nstart: ["${site.origin}/"]\nallowPrivateNetworks: true\nmaxInFlightPerDomain: ${N}\n`);
    await kickoff(world.redis, validateSeed({ arena: 'killed', rateLimits: { [site.key]: 'unlimited' }, start: [`${site.origin}/`], allowPrivateNetworks: true, maxInFlightPerDomain: N }));
    const start = (): ChildProcess => spawn(process.execPath, [cliBundle(), 'worker', seedPath, '--redis', world.server.url, '--exit-when-done', '--concurrency', String(N)], { stdio: 'ignore', env: { ...process.env, WEIR_LOG_LEVEL: 'warn' } });
    const first = start();
    const held = (): number => new Set(seen.filter((r) => r.path.startsWith('/k/')).map((r) => r.path)).size;
    for (let i = 0; i < 300 && held() < N; i++) await new Promise((r) => setTimeout(r, 50));
    assert.equal(held(), N, 'the first worker holds every URL');
    first.kill('SIGKILL');
    const killedAt = performance.now();
    await exited(first);
    const second = start();
    assert.equal(await exited(second), 0);
    const back = seen.filter((r) => r.path.startsWith('/k/') && r.at > killedAt);
    assert.equal(new Set(back.map((r) => r.path)).size, N, 'every held URL fetched again');
    const latest = Math.max(...back.map((r) => r.at)) - killedAt;
    t.diagnostic(`the dead worker's ${N} URLs were fetched again ${(Math.min(...back.map((r) => r.at)) - killedAt).toFixed(0)}–${latest.toFixed(0)} ms after the kill`);
    // The lease lapses 10 s after its last renewal (before the kill); the idle
    // worker's wait ends at that expiry (two seconds' grace for a loaded machine).
    assert.ok(latest <= 12_000, `${latest.toFixed(0)} ms`);
  });
});

describe('workers killed at random', () => {
  it('WARC: workers SIGKILLed mid-write leave every earlier record readable, and each URL complete in some file', async (t) => {
    const BODY = 4 * 1024 * 1024;
    const N = 24;
    const digests = new Map<string, string>();
    const site = await world.web.site('W', { '/robots.txt': 'User-agent: *\nAllow: /\n', '/': html(Array.from({ length: N }, (_, i) => `<a href="/f/${i}">${i}</a>`).join('')) }, (req, res) => {
      // Big incompressible bodies: writing each record takes long enough to be caught mid-write.
      const body = randomBytes(BODY);
      digests.set(`${req.url}#${digests.size}`, sha1Base32(body));
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.end(body);
    });
    const dir = join(world.dir, 'warc-kill');
    const seedPath = join(world.dir, 'warc-kill.yaml');
    await writeFile(seedPath, `arena: warckill\nrateLimits:\n  "${site.key}": unlimited\nstart: ["${site.origin}/"]\nallowPrivateNetworks: true\nmaxInFlightPerDomain: 2\nmaxBodyBytes: ${BODY * 2}\n`);
    const start = (): ChildProcess =>
      spawn(process.execPath, [cliBundle(), 'worker', seedPath, '--redis', world.server.url, '--exit-when-done', '--lease-ms', '1000', '--concurrency', '2', '--warc', dir], { stdio: 'ignore', env: { ...process.env, WEIR_LOG_LEVEL: 'warn' } });
    await kickoff(world.redis, validateSeed({ arena: 'warckill', rateLimits: { [site.key]: 'unlimited' }, start: [`${site.origin}/`], allowPrivateNetworks: true, maxInFlightPerDomain: 2, maxBodyBytes: BODY * 2 }));
    let workers = [start(), start()];
    const q = new FairQueue(world.redis);
    let kills = 0;
    try {
      const deadline = Date.now() + 90_000;
      while (!(await q.stats('warckill')).drained && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 150 + Math.random() * 300));
        const victim = workers[Math.floor(Math.random() * workers.length)] as ChildProcess;
        if (victim.exitCode === null && kills < 12) {
          victim.kill('SIGKILL');
          kills++;
          workers = [...workers.filter((w) => w !== victim), start()];
        }
      }
      await Promise.all(workers.map(exited));
      assert.ok((await q.stats('warckill')).drained, 'the crawl finished');
    } finally {
      for (const w of workers) if (w.exitCode === null) w.kill('SIGKILL');
      await q.close();
    }
    let torn = 0;
    const complete = new Set<string>();
    const sentDigests = new Set(digests.values());
    for (const f of (await readdir(dir)).filter((n) => n.endsWith('.warc.gz'))) {
      const r = await readWarcFile(join(dir, f));
      if (r.tornAt !== null) torn++;
      // Everything before the tear reads as whole records.
      for (const rec of r.records) {
        if (rec.header('WARC-Type') !== 'response' || rec.header('WARC-Truncated')) continue;
        const payload = httpMessage(rec.block).payload;
        assert.equal(rec.header('WARC-Payload-Digest'), sha1Base32(payload));
        if (sentDigests.has(sha1Base32(payload))) complete.add(new URL(rec.header('WARC-Target-URI') as string).pathname);
      }
    }
    t.diagnostic(`${kills} kills, ${torn} files torn at their end, ${complete.size} of ${N} bodies complete in some file`);
    for (let i = 0; i < N; i++) assert.ok(complete.has(`/f/${i}`), `/f/${i} complete in some file`);
  });

  it('4 worker processes, one SIGKILLed every second and replaced: the crawl completes; re-fetches only for leases in flight at a kill', async (t) => {
    // The site runs in its own process (tree-web.ts): this one spawns and
    // kills workers, which would delay its clock. The judge first: the site
    // must stamp arrivals when they arrive. On two cores shared with Redis
    // and a worker starting every second, a site at normal priority was seen
    // stalled ~50 ms and stamping two requests that arrived 64 ms apart 14 ms
    // apart (checked against the workers' own send times). TreeWeb raises
    // its priority where allowed (root, as in CI); the workers are lowered too.
    const web = await TreeWeb.start();
    const key = await web.add('K', PAGES);
    const K = { key, origin: `http://${key}` };
    const seedPath = join(world.dir, 'kill.yaml');
    await writeFile(seedPath, `arena: killloop\nrateLimits:\n  "${K.key}": 50\nstart: ["${K.origin}/"]\nallowPrivateNetworks: true\nmaxInFlightPerDomain: 4\n`);
    await kickoff(world.redis, validateSeed({ arena: 'killloop', rateLimits: { [K.key]: 50 }, start: [`${K.origin}/`], allowPrivateNetworks: true, maxInFlightPerDomain: 4 }));
    const CONCURRENCY = 2;
    // Workers run at a lower CPU priority than the site, from the bundled
    // command (less CPU to start): a real server has its own CPU, and this one
    // must stamp arrivals on time to judge the gaps (here four workers, one
    // starting every second, share two cores with it).
    const start = (): ChildProcess => {
      const w = spawn(process.execPath, [cliBundle(), 'worker', seedPath, '--redis', world.server.url, '--exit-when-done', '--lease-ms', '1500', '--concurrency', String(CONCURRENCY)], {
        stdio: 'ignore',
        env: { ...process.env, WEIR_LOG_LEVEL: 'warn' },
      });
      if (w.pid !== undefined) setPriority(w.pid, 10);
      return w;
    };
    let workers = [start(), start(), start(), start()];
    const q = new FairQueue(world.redis);
    let kills = 0;
    try {
      const deadline = Date.now() + 90_000;
      for (;;) {
        await new Promise((r) => setTimeout(r, 1000));
        const s = await q.stats('killloop');
        if (s.drained || Date.now() > deadline) break;
        const victim = workers[Math.floor(Math.random() * workers.length)] as ChildProcess;
        if (victim.exitCode === null) {
          victim.kill('SIGKILL');
          kills++;
          workers = [...workers.filter((w) => w !== victim), start()];
        }
      }
      await Promise.all(workers.map(exited));
      const s = await q.stats('killloop');
      assert.deepEqual([s.queued, s.leased, s.delayed, s.dead], [0, 0, 0, 0]);
    } finally {
      for (const w of workers) if (w.exitCode === null) w.kill('SIGKILL');
      await q.close();
    }
    const log = await web.log();
    await web.close();
    const paths = log.map((r) => r.path).filter((p) => p !== '/robots.txt');
    for (let n = 0; n < PAGES; n++) assert.ok(paths.includes(n === 0 ? '/' : `/p/${n}`), `page ${n}`);
    const refetched = paths.length - new Set(paths).size;
    // A killed worker's pages come back to be fetched again: each lane's
    // lease, and the page each lane fetched before it whose commit was still
    // on its way (riding on the worker's next call to Redis, up to 20 ms:
    // FairQueue.commitAndTake). Its spare leases were not fetched yet.
    const bound = kills * 2 * CONCURRENCY;
    t.diagnostic(`${kills} kills, ${refetched} pages fetched twice (bound: kills × 2 × concurrency = ${bound})`);
    assert.ok(kills >= 2, 'the crawl lasted long enough to kill workers');
    assert.ok(refetched <= bound, `${refetched} re-fetches for ${kills} kills`);
    // A gap is short only if it is short even allowing for the site's own
    // stamping lag (the earlier request may have arrived up to its lag before
    // its stamp): the judge's precision, measured by the judge.
    const { gap, around } = closestPair(log);
    const maxLag = Math.max(...log.map((r) => r.lag));
    // What the workers' pacers counted: requests written late past their
    // slot, and slots given up past their send window.
    const tallies = await world.redis.hgetall(crawlKeys('killloop', q).stats);
    const late = ['lateSends', 'lateSlots'].map((k) => `${k} ${tallies[`*:${k}`] ?? 0}`).join(', ');
    const pair = requestTimes(around, Math.min(...log.map((r) => r.at)));
    t.diagnostic(`smallest gap ${gap.toFixed(1)} ms at 50/s; the site's largest stamping lag ${maxLag.toFixed(1)} ms; ${late}`);
    assert.ok(gap >= 20, `the rate held through the kills: smallest gap ${gap.toFixed(1)} ms (${late}): ${pair}`);
  });
});

describe('clock skew', () => {
  it('workers whose clocks run 5 minutes fast and slow still keep the rate: only Redis time is used', async (t) => {
    const S = world.web.sites.get('S');
    assert.ok(S);
    const seed = { arena: 'skew', rateLimits: { [S.key]: 10 }, start: [`${S.origin}/`], allowPrivateNetworks: true, maxDepth: 4, maxInFlightPerDomain: 4 };
    await kickoff(world.redis, validateSeed(seed));
    const run = (skew: number): Promise<number | null> => {
      const p = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'test/fault/worker-runner.ts'), JSON.stringify({ redisUrl: world.server.url, seed, concurrency: 4, out: join(world.dir, `skew${skew}.jsonl`), clockSkewMs: skew })], { stdio: 'ignore' });
      return exited(p);
    };
    const codes = await Promise.all([run(5 * 60_000), run(-5 * 60_000)]);
    assert.deepEqual(codes, [0, 0]);
    const reqs = world.web.of('S');
    assert.equal(reqs.filter((r) => r.path !== '/robots.txt').length, 31, 'depth 0..4 of the tree');
    t.diagnostic(`smallest gap ${smallestGap(reqs).toFixed(1)} ms at 10/s`);
    assert.ok(smallestGap(reqs) >= 100, `smallest gap ${smallestGap(reqs)} ms`);
  });

  it('negative control: the same check fails for a scheduler that trusts client clocks (the seed design)', async () => {
    // next-allowed time kept in Redis but compared with the caller's clock, as the seed design did.
    const script = `local nx = tonumber(redis.call('GET', KEYS[1]) or '0')
      local now = tonumber(ARGV[1])
      if now >= nx then redis.call('SET', KEYS[1], now + tonumber(ARGV[2])); return 1 end
      return 0`;
    const grants: number[] = [];
    const client = (skew: number) => async (): Promise<void> => {
      const until = Date.now() + 1000;
      while (Date.now() < until) {
        const ok = await world.redis.eval(script, 1, 'control:{skew}:next', String(Date.now() + skew), '100');
        if (ok === 1) grants.push(performance.now());
        await new Promise((r) => setTimeout(r, 5));
      }
    };
    await world.redis.del('control:{skew}:next');
    // The slow clock's worker gets a grant first (as it will, sooner or later, in any mix) …
    assert.equal(await world.redis.eval(script, 1, 'control:{skew}:next', String(Date.now() - 5 * 60_000), '100'), 1);
    grants.push(performance.now());
    // … and from then on the fast clock is always past "next".
    await Promise.all([client(5 * 60_000)(), client(-5 * 60_000)()]);
    const sorted = grants.sort((a, b) => a - b);
    let min = Infinity;
    for (let i = 1; i < sorted.length; i++) min = Math.min(min, (sorted[i] as number) - (sorted[i - 1] as number));
    // Once the slow clock has set "next", the fast clock is granted at every poll, far under 100 ms apart.
    assert.ok(min < 100 - 5, `the client-clock scheduler kept ${min} ms: the check would not catch it`);
  });
});
