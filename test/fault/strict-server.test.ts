/**
 * Politeness judged by a strict server: every site behind a real nginx with
 * `limit_req` at exactly the rate weir is given and no burst
 * (test/helpers/strict-crawl.ts), which refuses (429) any request arriving
 * sooner than 1/R after the last one it let through. weir at that same rate
 * must be refused nothing: on a quiet machine, with a CPU hog beside the
 * workers, with a worker SIGKILLed mid-crawl, and at 20/s. (On a Redis
 * Cluster: test/cluster/strict-server.test.ts.)
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it, type TestContext } from 'node:test';
import { judgeStrict, strictCrawl, type StrictCrawl, type StrictResult } from '../helpers/strict-crawl.js';

let dir = '';
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'weir-strict-'));
});
after(async () => rm(dir, { recursive: true, force: true }));

const WEB = { sites: 100, rate: 2, pages: 33, workers: 4, concurrency: 32, capMs: 120_000 };

async function crawl(t: TestContext, s: Omit<StrictCrawl, 'dir'>): Promise<StrictResult> {
  const r = await strictCrawl({ ...s, dir });
  judgeStrict(t, s, r);
  return r;
}

describe('a strict server (nginx limit_req, no burst) refuses nothing', () => {
  it('100 sites at 2/s, 4 workers, one Redis', async (t) => {
    const r = await crawl(t, WEB);
    assert.deepEqual(r.exits, [0, 0, 0, 0]);
    // (With the 25 ms margin a site's pace is at most 500/525 = 0.952; runs keep
    // 0.91-0.94, and a loaded test run loses a little more. This catches a pace
    // that collapses, not a few per cent.)
    assert.ok(r.efficiency >= 0.85, `the busiest site kept ${(r.efficiency * 100).toFixed(1)} % of its rate`);
  });

  it('with a CPU hog beside the workers', async (t) => {
    await crawl(t, { ...WEB, hog: true });
  });

  it('with a worker SIGKILLed mid-crawl', async (t) => {
    const r = await crawl(t, { ...WEB, killAtMs: 6000 });
    assert.equal(r.exits[0], null, 'the first worker was killed');
  });

  it('5 sites at 20/s', async (t) => {
    await crawl(t, { ...WEB, sites: 5, rate: 20, pages: 300, concurrency: 16 });
  });
});
