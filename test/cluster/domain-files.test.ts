/**
 * Domain and start files kicked off onto a local 3-master Redis Cluster: the
 * domain list (one hash in the arena's first slot) written and read with
 * commands of many arguments, the queues made on every master's shards,
 * unlisted start URLs listed at the default rate; a second kickoff finds
 * nothing new.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { Cluster } from 'ioredis';
import { kickoff } from '../../src/crawl/kickoff.js';
import { DomainList } from '../../src/crawl/links/domain-list.js';
import { validateSeed } from '../../src/crawl/seed/seed.js';
import { crawlKeys } from '../../src/crawl/store/keys.js';
import { FairQueue } from '../../src/queue/index.js';
import { shardOf } from '../../src/queue/internal.js';
import { connectRedis } from '../../src/redis.js';
import { startCluster } from '../helpers/redis.js';

const ARENA = 'domainfiles-cluster';
const LISTED = 3000;
const site = (i: number): string => `site-${i}.test`;

describe('domain files on a Redis Cluster', () => {
  it('kickoff lists 3,000 domains, queues listed and unlisted start URLs, each queue made by its first URL on every master; again: nothing new', async () => {
    const cluster = await startCluster();
    const client = (await connectRedis(`redis://127.0.0.1:${cluster.ports[0]}`)) as Cluster;
    const dir = await mkdtemp(join(tmpdir(), 'weir-cluster-lists-'));
    try {
      const domains = join(dir, 'domains.csv');
      await writeFile(domains, ['domain,rate,maxInFlight', ...Array.from({ length: LISTED }, (_, i) => `${site(i)},${1 + (i % 3)},2`)].join('\n'));
      const starts = join(dir, 'starts.txt');
      // 2,000 listed sites' home pages (on a subdomain: the list's parent key takes them) and 500 sites no list names.
      await writeFile(starts, [...Array.from({ length: 2000 }, (_, i) => `http://www.${site(i)}/`), ...Array.from({ length: 500 }, (_, i) => `http://other-${i}.test/`)].join('\n'));
      const seed = validateSeed({ arena: ARENA, domainFiles: [domains], startFiles: [starts], defaultRate: 0.5 });
      const first = await kickoff(client, seed);
      assert.deepEqual([first.domainFiles.domains, first.domainsCreated, first.domainFiles.defaulted, first.files.enqueued], [LISTED, 2500, 500, 2500], 'a new arena: queues for the 2,000 listed domains with start URLs and the 500 at the default rate');
      const queue = new FairQueue(client);
      assert.equal((await queue.stats(ARENA)).queued, 2500);
      const layout = await queue.layout(ARENA);
      const shards = new Set((await queue.allQueueStats(ARENA)).map((q) => shardOf(q.name, layout.shards)));
      assert.ok(layout.shards >= 3 && shards.size === layout.shards, `queues on ${shards.size} of ${layout.shards} shards`);
      const rows = (await queue.namedQueueStats(ARENA, [site(4), 'other-7.test'])).map((q) => [q.name, q.rate, q.queued]);
      assert.deepEqual(rows.sort(), [['other-7.test', 0.5, 1], [site(4), 2, 1]]);
      // The list as workers read it: a batch of hosts at once, listed ones by their key and limits.
      const list = new DomainList(client, crawlKeys(ARENA, queue).domainList, 0);
      const found = await list.matchAll([new URL(`http://a.b.${site(2999)}/x`), new URL('http://other-9.test/'), new URL('http://nowhere.test/')]);
      assert.deepEqual(found, [{ key: site(2999), limits: { rate: 3, maxInFlight: 2 } }, { key: 'other-9.test', limits: { rate: 0.5, maxInFlight: seed.maxInFlightPerDomain } }, null]);
      const again = await kickoff(client, seed);
      assert.deepEqual([again.domainsCreated, again.domainFiles.defaulted, again.files.enqueued], [LISTED - 2000, 0, 0], 'the arena has queues now: every listed domain has one made or set (the 1,000 with no start URL made)');
      assert.equal((await queue.stats(ARENA)).queued, 2500);
      await queue.close();
    } finally {
      client.disconnect();
      await cluster.destroy();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
