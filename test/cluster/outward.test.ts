/**
 * Crawling outward on a 3-master Redis Cluster: new domains are created on
 * every master's shards by the enqueues that meet them, while maxDomains
 * (a set on the arena's first shard) and maxPagesPerDomain stay exact;
 * and so with politeness per server (a server's queue is one queue, on one
 * shard, like any other).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Cluster } from 'ioredis';
import { FairQueue } from '../../src/queue/index.js';
import { shardOf } from '../../src/queue/internal.js';
import { connectRedis } from '../../src/redis.js';
import { startCluster } from '../helpers/redis.js';
import { cappedCrawl } from '../helpers/outward-web.js';

describe('crawling outward on a Redis Cluster', () => {
  it('maxDomains and maxPagesPerDomain are exact with new domains on every master', async () => {
    const cluster = await startCluster();
    const client = (await connectRedis(`redis://127.0.0.1:${cluster.ports[0]}`)) as Cluster;
    try {
      await cappedCrawl(client, 'outward-cluster');
      const queue = new FairQueue(client);
      const layout = await queue.layout('outward-cluster');
      const shards = new Set((await queue.allQueueStats('outward-cluster')).filter((q) => q.name.includes(':')).map((q) => shardOf(q.name, layout.shards)));
      assert.ok(layout.shards >= 3 && shards.size >= 3, `new domains on ${shards.size} of ${layout.shards} shards`);
      // Politeness per server on the same Cluster: the servers' queues, the caps still exact, each server at its rate by its own log.
      await cappedCrawl(client, 'outward-cluster-servers', { perServer: true });
      await queue.close();
    } finally {
      client.disconnect();
      await cluster.destroy();
    }
  });
});
