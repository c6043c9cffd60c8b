/**
 * Redis failures during a crawl: restarted (SIGTERM, then SIGKILL) on its AOF
 * data, and unreachable for a while. Workers reconnect with capped backoff,
 * reload their scripts and finish; nothing queued is lost.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { kickoff } from '../../src/crawl/kickoff.js';
import { validateSeed } from '../../src/crawl/seed/seed.js';
import { CrawlWorker } from '../../src/crawl/worker.js';
import { connectRedis, type RedisClient } from '../../src/redis.js';
import { freePort, startRedis, type RedisServer } from '../helpers/redis.js';
import { FixtureWeb, treeSite } from '../helpers/web.js';

const PAGES = 120;
let web: FixtureWeb;
let dir: string;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'weir-redisfault-'));
  web = new FixtureWeb();
  await web.site('T', { '/robots.txt': 'User-agent: *\nAllow: /\n' }, treeSite(PAGES));
});

after(async () => {
  await web.close();
  await rm(dir, { recursive: true, force: true });
});

const pathOf = (n: number): string => (n === 0 ? '/' : `/p/${n}`);

async function crawlThrough(arena: string, server: RedisServer, fault: () => Promise<void>): Promise<{ refetched: number; reconnects: number }> {
  const T = web.sites.get('T');
  assert.ok(T);
  const seed = validateSeed({ arena, rateLimits: { [T.key]: 40 }, start: [`${T.origin}/`], allowPrivateNetworks: true, maxInFlightPerDomain: 4 });
  const setup = await connectRedis(server.url);
  await kickoff(setup, seed);
  setup.disconnect();
  let reconnects = 0;
  const clients: RedisClient[] = [];
  const before = web.of('T').length;
  const workers = await Promise.all(
    [0, 1].map(async () => {
      const c = await connectRedis(server.url, { onReconnect: () => reconnects++ });
      clients.push(c);
      return new CrawlWorker(c, seed, { concurrency: 4, exitWhenDone: true, leaseMs: 3000 });
    }),
  );
  const running = Promise.all(workers.map((w) => w.run()));
  while (web.of('T').length - before < 30) await new Promise((r) => setTimeout(r, 10));
  await fault();
  await running;
  for (const c of clients) c.disconnect();
  const paths = web.of('T').slice(before).map((r) => r.path).filter((p) => p !== '/robots.txt');
  for (let n = 0; n < PAGES; n++) assert.ok(paths.includes(pathOf(n)), `page ${n} fetched`);
  return { refetched: paths.length - new Set(paths).size, reconnects };
}

describe('Redis restarted mid-crawl (AOF, appendfsync everysec)', () => {
  for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
    it(`${signal}: workers reconnect, reload their scripts and finish; every page is fetched`, async (t) => {
      const server = await startRedis({ appendonly: true });
      try {
        const r = await crawlThrough(`restart-${signal}`, server, async () => {
          await server.stop(signal);
          await new Promise((res) => setTimeout(res, 1500));
          await server.restart();
        });
        t.diagnostic(`${signal}: ${r.refetched} pages fetched again after the restart, ${r.reconnects} reconnect attempts`);
        assert.ok(r.reconnects >= 1, 'the workers noticed and reconnected');
      } finally {
        await server.destroy();
      }
    });
  }
});

describe('Redis unreachable', () => {
  it('for a minute mid-crawl: no crash, capped backoff (no busy loop), the crawl finishes', async (t) => {
    const server = await startRedis({ appendonly: true });
    try {
      let downFor = 0;
      const r = await crawlThrough('outage', server, async () => {
        await server.stop('SIGTERM');
        const t0 = Date.now();
        await new Promise((res) => setTimeout(res, 60_000));
        downFor = Date.now() - t0;
        await server.restart();
      });
      t.diagnostic(`down ${downFor} ms: ${r.reconnects} reconnect attempts by 2 workers (and their blocking and pause-listening connections)`);
      // Backoff 100 ms, 200 ms, … capped at 0.5 s (a restart should cost only its
      // own downtime): at most ~120 per connection over a minute, 6 connections
      // (each worker's own, its wake-list blocker, its Retry-After listener), not thousands.
      assert.ok(r.reconnects > 0 && r.reconnects <= 6 * (60_000 / 500) + 60, `${r.reconnects} reconnect attempts`);
    } finally {
      await server.destroy();
    }
  });

  it('at start: a worker retries with capped backoff, logging each try, and carries on when Redis comes', async (t) => {
    const T = web.sites.get('T');
    assert.ok(T);
    const port = await freePort();
    const seedPath = join(dir, 'late.yaml');
    await writeFile(seedPath, `arena: late\nrateLimits:\n  "${T.key}": unlimited\nstart: ["${T.origin}/"]\nallowPrivateNetworks: true\nmaxDepth: 2\n`);
    const cli = new URL('../../src/cli.ts', import.meta.url).pathname;
    const p = spawn(process.execPath, ['--import', 'tsx', cli, 'worker', seedPath, '--redis', `redis://127.0.0.1:${port}`, '--exit-when-done'], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, WEIR_LOG_LEVEL: 'info' } });
    let stderr = '';
    p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    await new Promise((r) => setTimeout(r, 4000));
    const server = await startRedis({ port });
    try {
      const setup = await connectRedis(server.url);
      await kickoff(setup, validateSeed({ arena: 'late', rateLimits: { [T.key]: 'unlimited' }, start: [`${T.origin}/`], allowPrivateNetworks: true, maxDepth: 2 }));
      setup.disconnect();
      const code = await new Promise((res) => p.on('exit', res));
      const tries = stderr.split('\n').filter((l) => l.includes('Redis unreachable')).length;
      t.diagnostic(`${tries} logged tries in about 4 s before Redis came`);
      assert.equal(code, 0, stderr.slice(-1500));
      assert.ok(tries >= 2 && tries <= 8, `${tries} tries: capped backoff, not a busy loop`);
    } finally {
      if (p.exitCode === null) p.kill('SIGKILL');
      await server.destroy();
    }
  });

  it('at start, when it never comes: one line and exit 3 (kickoff at once; a worker after --redis-wait)', async () => {
    const w = spawn(process.execPath, ['--import', 'tsx', new URL('../../src/cli.ts', import.meta.url).pathname, 'worker', join(dir, 'late.yaml'), '--redis', 'redis://127.0.0.1:1', '--redis-wait', '1'], { stdio: 'ignore' });
    assert.equal(await new Promise((res) => w.on('exit', res)), 3);
  });

  it('at start: the CLI says so in one line and exits 3', async () => {
    const seedPath = join(dir, 'nowhere.yaml');
    await writeFile(seedPath, 'arena: nowhere\nrateLimits:\n  a.test: 1\nstart: [http://a.test/]\n');
    const p = spawn(process.execPath, ['--import', 'tsx', new URL('../../src/cli.ts', import.meta.url).pathname, 'kickoff', seedPath, '--redis', 'redis://127.0.0.1:1'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise((res) => p.on('exit', res));
    assert.equal(code, 3);
    // Logs are JSON lines; the failure itself is one plain line, no stack.
    const plain = stderr.trim().split('\n').filter((l) => !l.startsWith('{'));
    assert.equal(plain.length, 1, stderr);
    assert.ok(!/\n\s+at /.test(stderr));
    assert.match(stderr, /cannot reach Redis at redis:\/\/127\.0\.0\.1:1/);
  });
});

describe('Redis with a password (ACL user)', () => {
  it('works through the URL and never logs the password', async () => {
    const server = await startRedis({ args: ['--user', 'crawler', 'on', '>s3cret-Pa55', '~*', '&*', '+@all', '--user', 'default', 'off'] });
    try {
      const url = `redis://crawler:s3cret-Pa55@127.0.0.1:${server.port}`;
      const T = web.sites.get('T');
      assert.ok(T);
      const seedPath = join(dir, 'acl.yaml');
      await writeFile(seedPath, `arena: acl\nrateLimits:\n  "${T.key}": unlimited\nstart: ["${T.origin}/"]\nallowPrivateNetworks: true\nmaxDepth: 2\n`);
      // Each command gets 60 s (they take 1–3): one that hangs fails here with its name and what it printed, not at the file's timeout with nothing.
      const run = (args: string[]): Promise<{ code: unknown; out: string }> =>
        new Promise((res) => {
          const p = spawn(process.execPath, ['--import', 'tsx', new URL('../../src/cli.ts', import.meta.url).pathname, ...args], {
            stdio: ['ignore', 'pipe', 'pipe'],
            env: { ...process.env, WEIR_LOG_LEVEL: 'debug' },
          });
          let out = '';
          const hung = setTimeout(() => {
            out += `\n[test: weir ${args[0]} still running after 60 s: killed]`;
            p.kill('SIGKILL');
          }, 60_000);
          p.stdout.on('data', (d: Buffer) => (out += d.toString()));
          p.stderr.on('data', (d: Buffer) => (out += d.toString()));
          p.on('exit', (code) => {
            clearTimeout(hung);
            res({ code, out });
          });
        });
      const k = await run(['kickoff', seedPath, '--redis', url]);
      assert.equal(k.code, 0, k.out);
      const w = await run(['worker', seedPath, '--redis', url, '--exit-when-done', '--out', join(dir, 'acl.jsonl')]);
      assert.equal(w.code, 0, w.out);
      const c = await run(['crawl', seedPath, '--redis', url, '--workers', '1']);
      assert.equal(c.code, 0, c.out);
      for (const o of [k.out, w.out, c.out]) assert.ok(!o.includes('s3cret'), 'the password appears in the output');
      assert.match(w.out, /redis:\/\/crawler:\*\*\*@127\.0\.0\.1/);
      assert.equal((await readFile(join(dir, 'acl.jsonl'), 'utf8')).trim().split('\n').length, 7);
      // And a wrong password is a clear, secret-free error.
      const bad = await run(['kickoff', seedPath, '--redis', `redis://crawler:wrong-Pa55@127.0.0.1:${server.port}`]);
      assert.notEqual(bad.code, 0);
      assert.ok(!bad.out.includes('wrong-Pa55'));
    } finally {
      await server.destroy();
    }
  });
});
