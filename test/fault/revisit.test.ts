/**
 * A continuous crawl (seed revisit) through a killed worker and a Redis
 * restarted from its AOF: no URL's record is lost (every page is still
 * asked conditionally afterwards, and answered 304), and no URL is left
 * without a next visit.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { kickoff } from '../../src/crawl/kickoff.js';
import { validateSeed } from '../../src/crawl/seed/seed.js';
import { FairQueue } from '../../src/queue/index.js';
import { connectRedis } from '../../src/redis.js';
import { cliBundle } from '../helpers/cli-bundle.js';
import { startRedis } from '../helpers/redis.js';
import { html } from '../helpers/web.js';
import { useCrawlWorld } from '../helpers/world.js';

const world = useCrawlWorld('revisit-fault');
const PAGES = 40;

const exited = (p: ChildProcess): Promise<number | null> => new Promise((r) => (p.exitCode !== null || p.signalCode !== null ? r(p.exitCode) : p.on('exit', (c) => r(c))));
const until = async (what: string, ok: () => boolean | Promise<boolean>, ms = 60_000): Promise<void> => {
  const end = performance.now() + ms;
  while (!(await ok())) {
    if (performance.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
};

describe('revisits through faults', () => {
  it('a worker SIGKILLed and Redis restarted from its AOF mid-crawl: every record kept, every URL still has a next visit', async (t) => {
    const server = await startRedis({ appendonly: true });
    const seen: { path: string; at: number; conditional: boolean; status: number }[] = [];
    let inFlight = 0;
    const site = await world.web.site('R', { '/robots.txt': 'User-agent: *\nAllow: /\n' }, (req, res) => {
      const path = req.url ?? '/';
      const etag = `"${path}"`;
      const conditional = req.headers['if-none-match'] !== undefined;
      const status = req.headers['if-none-match'] === etag ? 304 : 200;
      seen.push({ path, at: performance.now(), conditional, status });
      // Slow answers: a worker killed mid-crawl is holding leases.
      inFlight++;
      setTimeout(() => {
        inFlight--;
        res.writeHead(status, { 'content-type': 'text/html', etag });
        res.end(status === 304 ? undefined : html(path === '/' ? Array.from({ length: PAGES }, (_, i) => `<a href="/p/${i}">${i}</a>`).join(' ') : path));
      }, 150);
    });
    const paths = ['/', ...Array.from({ length: PAGES }, (_, i) => `/p/${i}`)];
    const fields = { arena: 'revisit-fault', rateLimits: { [site.key]: 200 }, maxInFlightPerDomain: 4, start: [`${site.origin}/`], allowPrivateNetworks: true, revisit: { minIntervalSeconds: 1, initialIntervalSeconds: 1, maxIntervalSeconds: 2 } };
    const seedPath = join(world.dir, 'revisit-fault.json');
    await writeFile(seedPath, JSON.stringify(fields));
    const setup = await connectRedis(server.url);
    const workers: ChildProcess[] = [];
    try {
      await kickoff(setup, validateSeed(fields));
      const start = (): ChildProcess => {
        const p = spawn(process.execPath, [cliBundle(), 'worker', seedPath, '--redis', server.url, '--concurrency', '4'], { stdio: 'ignore', env: { ...process.env, WEIR_LOG_LEVEL: 'warn' } });
        workers.push(p);
        return p;
      };
      const [a] = [start(), start()];
      const visitsSince = (t0: number, path: string): number => seen.filter((s) => s.path === path && s.at > t0).length;
      // Revisits under way: every page seen at least twice.
      await until('two visits of every page', () => paths.every((p) => visitsSince(0, p) >= 2));
      const heldAtKill = inFlight;
      a?.kill('SIGKILL');
      await exited(a);
      await server.stop('SIGTERM');
      await new Promise((r) => setTimeout(r, 500));
      await server.restart();
      const restartedAt = performance.now();
      start();
      // Every page visited twice more after the restart (the dead worker's leases lapse within 10 s and come back).
      await until('two visits of every page after the restart', () => paths.every((p) => visitsSince(restartedAt, p) >= 2));
      const after = seen.filter((s) => s.at > restartedAt);
      const unconditional = after.filter((s) => !s.conditional).map((s) => s.path);
      assert.deepEqual(unconditional, [], 'every request after the restart carried its record\'s validators');
      assert.ok(after.every((s) => s.status === 304));
      // Every URL still queued, waiting for its next visit, or leased: none lost, none dead.
      const queue = new FairQueue(setup);
      await until('the dead worker\'s leases back', async () => {
        const s = await queue.stats('revisit-fault');
        return s.queued + s.delayed + s.leased === paths.length && s.dead === 0;
      }, 20_000);
      t.diagnostic(`${seen.length} requests, ${after.length} after the restart, all conditional and answered 304; ${heldAtKill} requests in flight at the kill`);
    } finally {
      for (const w of workers) w.kill('SIGTERM');
      await Promise.all(workers.map(exited));
      setup.disconnect();
      await server.destroy();
    }
  });
});
