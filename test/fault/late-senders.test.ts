/**
 * Politeness as the server sees it when a worker sends late. Two worker
 * processes, 10/s, judged from the site's own log (test/helpers/late-sender.mjs):
 * - blocked for 100 ms right before every second request goes out (before
 *   weir's send gate): the request goes late, and so does its report;
 * - blocked for 40 ms on every second request *after* the gate let it go,
 *   before undici writes it (a process preempted between the check and the
 *   write): the report comes after the write, whatever the stall.
 * Either way no two requests reach the site closer than 1/R: the next slot
 * is counted from the report that follows each write (lua/sent.lua).
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, describe, it, type TestContext } from 'node:test';
import { kickoff } from '../../src/crawl/kickoff.js';
import { storableSeed, validateSeed } from '../../src/crawl/seed/seed.js';
import { crawlKeys } from '../../src/crawl/store/keys.js';
import { FairQueue } from '../../src/queue/index.js';
import { cliBundle } from '../helpers/cli-bundle.js';
import { startSiteProcess, type SiteProcess } from '../helpers/site-process.js';
import { html, smallestGap } from '../helpers/web.js';
import { useCrawlWorld } from '../helpers/world.js';

const world = useCrawlWorld('late');
const LATE_SENDER = new URL('../helpers/late-sender.mjs', import.meta.url).pathname;
const sites: SiteProcess[] = [];
after(async () => Promise.all(sites.map((s) => s.close())));

const exited = (p: ChildProcess): Promise<number | null> => new Promise((r) => (p.exitCode !== null ? r(p.exitCode) : p.on('exit', (c) => r(c))));

const PAGES = 60;
const RATE = 10;

/** A crawl of one site by two late-sending workers (`env` sets their lateness); what the site and the late senders saw. */
async function lateCrawl(arena: string, env: Record<string, string>): Promise<{ gap: number; requests: number; blocked: number; sent: number; tallies: Record<string, number> }> {
  const site = await startSiteProcess(arena, {
    routes: { '/robots.txt': 'User-agent: *\nAllow: /\n', '/': html(Array.from({ length: PAGES }, (_, i) => `<a href="/p/${i}">${i}</a>`).join(' ')) },
    fallback: html('leaf'),
  });
  sites.push(site);
  const seed = validateSeed({ arena, rateLimits: { [site.key]: RATE }, start: [`${site.origin}/`], maxInFlightPerDomain: 6, allowPrivateNetworks: true });
  const seedPath = join(world.dir, `${arena}.json`);
  await writeFile(seedPath, JSON.stringify(storableSeed(seed)));
  await kickoff(world.redis, seed);
  const blockedLog = join(world.dir, `${arena}-blocked.log`);
  const worker = (): ChildProcess =>
    spawn(process.execPath, ['--import', LATE_SENDER, cliBundle(), 'worker', seedPath, '--redis', world.server.url, '--exit-when-done', '--concurrency', '4'], {
      stdio: 'ignore',
      env: { ...process.env, WEIR_LOG_LEVEL: 'warn', LATE_SENDER_LOG: blockedLog, ...env },
    });
  const workers = [worker(), worker()];
  assert.deepEqual(await Promise.all(workers.map(exited)), [0, 0]);

  const keys = crawlKeys(arena, new FairQueue(world.redis));
  const stats = await world.redis.hgetall(keys.stats);
  const tallies = Object.fromEntries(['pages', 'lateSends', 'lateSlots'].map((n) => [n, Number(stats[`*:${n}`] ?? 0)]));
  assert.equal(tallies.pages, PAGES + 1, 'every page fetched');
  const lines = (await readFile(blockedLog, 'utf8')).split('\n');
  const log = await site.log();
  return { gap: smallestGap(log), requests: log.length, blocked: lines.filter((l) => l.startsWith('blocked')).length, sent: lines.filter((l) => l === 'send').length, tallies };
}

function judge(t: TestContext, r: Awaited<ReturnType<typeof lateCrawl>>, what: string): void {
  t.diagnostic(`${r.requests} requests, smallest judged gap ${r.gap.toFixed(2)} ms (limit ${1000 / RATE} ms), ${r.sent} sends tried by the late workers, ${r.blocked} of them blocked ${what}; tallies ${JSON.stringify(r.tallies)}`);
  assert.ok(r.gap >= 1000 / RATE, `smallest gap ${r.gap.toFixed(2)} ms`);
}

describe('late senders', () => {
  it('workers blocked 100 ms before every second send: every request still at least 1/R after the one before, at the server', async (t) => {
    const r = await lateCrawl('late', {});
    const late = (r.tallies.lateSends ?? 0) + (r.tallies.lateSlots ?? 0);
    assert.ok(r.blocked >= PAGES / 2 - 5 && late > 0, `the late senders blocked ${r.blocked} sends; ${late} late sends or missed slots counted`);
    judge(t, r, '100 ms before the gate');
  });

  it('workers stalled 40 ms between the send gate and the write: the next slot counts from the report after the write: at least 1/R at the server', async (t) => {
    const r = await lateCrawl('stall', { LATE_SENDER_AFTER_GATE: '40' });
    // Each stalled write goes out late (lateSends) and is reported after it:
    // the next slot, whichever worker holds it, counts from there.
    assert.ok(r.blocked >= PAGES / 2 - 5 && (r.tallies.lateSends ?? 0) >= r.blocked / 2, `the late senders stalled ${r.blocked} writes; ${r.tallies.lateSends} written late`);
    judge(t, r, '40 ms after the gate');
  });
});
