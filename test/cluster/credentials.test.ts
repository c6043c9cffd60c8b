/**
 * Where a Redis Cluster's credentials go (issue 29, item 9): with an
 * allow-list (WEIR_CLUSTER_NODES, --cluster-nodes) no connection is made to
 * a node outside it, whatever the cluster announces; a password without TLS
 * is warned about. Judged by the nodes' own count of connections received.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { clusterNodeAllowList, clusterNodesFromEnv, connectRedis } from '../../src/redis.js';
import { startCluster, type RedisClusterHandle } from '../helpers/redis.js';

const PASSWORD = 'cluster-secret';

describe('Redis Cluster credentials', () => {
  let cluster: RedisClusterHandle;
  const admin: Redis[] = [];
  before(async () => {
    cluster = await startCluster();
    for (const port of cluster.ports) {
      const r = new Redis({ port, host: '127.0.0.1' });
      await r.config('SET', 'requirepass', PASSWORD);
      await r.auth(PASSWORD);
      admin.push(r);
    }
  });
  after(async () => {
    for (const r of admin) r.disconnect();
    await cluster.destroy();
  });

  const received = async (r: Redis): Promise<number> => Number(/total_connections_received:(\d+)/.exec(await r.info('stats'))?.[1]);

  it('an allow-list of one node: the others never get a connection (nor the password); without TLS, a warning', async () => {
    const [first, ...others] = cluster.ports;
    const before = await Promise.all(admin.slice(1).map(received));
    const warnings: string[] = [];
    // With its other masters refused the cluster may not come up at all (its ready check asks a
    // random node), or come up with their slots failing: either way, nothing may reach them.
    const url = `redis://:${PASSWORD}@127.0.0.1:${first}`;
    const client = await connectRedis(url, { clusterNodes: [`127.0.0.1:${first}`], onWarning: (m) => warnings.push(m), connectTimeoutMs: 2000 }).catch(() => null);
    if (client) {
      try {
        const results = await Promise.allSettled(Array.from({ length: 30 }, (_, i) => Promise.race([client.set(`k${i}`, '1'), new Promise((_r, reject) => setTimeout(() => reject(new Error('no answer')), 3000))])));
        assert.ok(results.some((r) => r.status === 'rejected'), 'slots on other nodes fail');
      } finally {
        client.disconnect();
      }
    }
    // (Each INFO is one command on an existing connection: it adds none.)
    assert.deepEqual(await Promise.all(admin.slice(1).map(received)), before, `nodes ${others.join(', ')} received no connection`);
    assert.equal(warnings.length, 1);
    assert.match(warnings[0] ?? '', /password is set but TLS is not/);
    assert.ok(!(warnings[0] ?? '').includes(PASSWORD), 'the warning does not show the password');

    // Every node listed: the cluster works as without a list.
    const all = await connectRedis(url, { clusterNodes: cluster.ports.map((p) => `127.0.0.1:${p}`), onWarning: () => undefined });
    try {
      for (let i = 0; i < 30; i++) await all.set(`k${i}`, '1');
    } finally {
      all.disconnect();
    }
  });

  it('without a list, every node is used (and still the warning, naming the list to set)', async () => {
    const warnings: string[] = [];
    const client = await connectRedis(`redis://:${PASSWORD}@127.0.0.1:${cluster.ports[0]}`, { clusterNodes: null, onWarning: (m) => warnings.push(m) });
    try {
      for (let i = 0; i < 30; i++) await client.set(`k${i}`, '1');
    } finally {
      client.disconnect();
    }
    assert.match(warnings[0] ?? '', /WEIR_CLUSTER_NODES/);
  });

  it('the list: host:port or host alone, IPv6 in brackets or bare, from WEIR_CLUSTER_NODES', () => {
    const allow = clusterNodeAllowList(['10.0.0.1:7000', 'redis-b', '[::1]:7001', 'fd00::2']);
    assert.ok(allow('10.0.0.1:7000'));
    assert.ok(!allow('10.0.0.1:7002'));
    assert.ok(allow('redis-b:6379') && allow('REDIS-B:1'));
    assert.ok(allow('::1:7001') && !allow('::1:7002'));
    assert.ok(allow('fd00::2:6379'));
    assert.ok(!allow('10.0.0.9:7000') && !allow('evil.example:7000'));
    assert.deepEqual(clusterNodesFromEnv({ WEIR_CLUSTER_NODES: ' 10.0.0.1:7000, 10.0.0.2:7000 ' }), ['10.0.0.1:7000', '10.0.0.2:7000']);
    assert.equal(clusterNodesFromEnv({}), null);
  });
});
