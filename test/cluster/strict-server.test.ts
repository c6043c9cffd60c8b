/** A strict server (nginx limit_req, no burst) refuses nothing from weir on a 3-master Redis Cluster: test/fault/strict-server.test.ts's web. */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { judgeStrict, strictCrawl } from '../helpers/strict-crawl.js';

let dir = '';
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'weir-strict-cluster-'));
});
after(async () => rm(dir, { recursive: true, force: true }));

describe('a strict server on a Redis Cluster', () => {
  it('100 sites at 2/s, 4 workers, 3 masters: nothing refused, every page fetched', async (t) => {
    const s = { sites: 100, rate: 2, pages: 33, workers: 4, concurrency: 32, capMs: 120_000, cluster: true };
    const r = await strictCrawl({ ...s, dir });
    judgeStrict(t, s, r);
    assert.deepEqual(r.exits, [0, 0, 0, 0]);
  });
});
