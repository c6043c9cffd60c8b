/**
 * Politeness as the server sees it when a worker sends late: both worker
 * processes have their event loops blocked for 100 ms right before every
 * second request goes out (test/helpers/late-sender.mjs). The next slot must
 * follow the late request's actual send, so no two requests reach the site
 * closer than 1/R − 5 ms, judged from the site's own log.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { kickoff } from '../../src/crawl/kickoff.js';
import { storableSeed, validateSeed } from '../../src/crawl/seed.js';
import { crawlKeys } from '../../src/crawl/keys.js';
import { FairQueue } from '../../src/queue/index.js';
import { cliBundle } from '../helpers/cli-bundle.js';
import { startSiteProcess, type SiteProcess } from '../helpers/site-process.js';
import { html, smallestGap } from '../helpers/web.js';
import { useCrawlWorld } from '../helpers/world.js';

const world = useCrawlWorld('late');
const LATE_SENDER = new URL('../helpers/late-sender.mjs', import.meta.url).pathname;
let site: SiteProcess | undefined;
after(async () => site?.close());

const exited = (p: ChildProcess): Promise<number | null> => new Promise((r) => (p.exitCode !== null ? r(p.exitCode) : p.on('exit', (c) => r(c))));

describe('late senders', () => {
  it('workers blocked 100 ms before every second send: every request still at least 1/R − 5 ms after the one before, at the server', async (t) => {
    const PAGES = 60;
    const RATE = 10;
    site = await startSiteProcess('L', {
      routes: { '/robots.txt': 'User-agent: *\nAllow: /\n', '/': html(Array.from({ length: PAGES }, (_, i) => `<a href="/p/${i}">${i}</a>`).join(' ')) },
      fallback: html('leaf'),
    });
    const seed = validateSeed({ arena: 'late', rateLimits: { [site.key]: RATE }, start: [`${site.origin}/`], maxInFlightPerDomain: 6, allowPrivateNetworks: true });
    const seedPath = join(world.dir, 'late.json');
    await writeFile(seedPath, JSON.stringify(storableSeed(seed)));
    await kickoff(world.redis, seed);
    const blockedLog = join(world.dir, 'blocked.log');
    const worker = (): ChildProcess =>
      spawn(process.execPath, ['--import', LATE_SENDER, cliBundle(), 'worker', seedPath, '--redis', world.server.url, '--exit-when-done', '--concurrency', '4'], {
        stdio: 'ignore',
        env: { ...process.env, WEIR_LOG_LEVEL: 'warn', LATE_SENDER_LOG: blockedLog },
      });
    const workers = [worker(), worker()];
    assert.deepEqual(await Promise.all(workers.map(exited)), [0, 0]);

    const keys = crawlKeys('late', new FairQueue(world.redis));
    const pages = Number(await world.redis.hget(keys.stats, '*:pages'));
    assert.equal(pages, PAGES + 1, 'every page fetched');
    const lines = (await readFile(blockedLog, 'utf8')).split('\n');
    const blocked = lines.filter((l) => l.startsWith('blocked')).length;
    const sent = lines.filter((l) => l === 'send').length;
    const late = Number(await world.redis.hget(keys.stats, '*:lateSends')) + Number(await world.redis.hget(keys.stats, '*:lateSlots'));
    assert.ok(blocked >= PAGES / 2 - 5 && late > 0, `the late senders blocked ${blocked} sends; ${late} late sends or missed slots counted`);
    const log = await site.log();
    const gap = smallestGap(log);
    t.diagnostic(`${log.length} requests, smallest judged gap ${gap.toFixed(2)} ms (limit ${1000 / RATE} ms), ${sent} sends tried by the late workers, ${blocked} of them blocked 100 ms, ${late} counted late`);
    assert.ok(gap >= 1000 / RATE - 5, `smallest gap ${gap.toFixed(2)} ms`);
  });
});
