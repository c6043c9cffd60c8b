/**
 * Redis replicates asynchronously: a master acknowledges a write before its
 * replica has it, and a master killed in between takes the write with it
 * when the replica is promoted. For most of the queue's writes that costs a
 * repeat at worst (a lost lease or commit: the item is served again). A lost
 * enqueue loses URLs. So on a Cluster whose masters have replicas, each
 * enqueue call is followed by WAIT for one replica on the same connection
 * (WAIT covers the writes this connection sent before it), bounded by
 * WAIT_MS so that a replica that is gone delays, never stops, a crawl.
 */
import { Cluster } from 'ioredis';
import type { RedisClient } from './types.js';

const WAIT_MS = 500;

export class ReplicaWait {
  private readonly slots = new Map<string, number>();

  constructor(private readonly client: RedisClient) {}

  /** After a write to shard `tag`: waits until a replica of its master has it (no-op without replicas). */
  async after(tag: string): Promise<void> {
    const cluster = this.client;
    if (!(cluster instanceof Cluster)) return;
    let slot = this.slots.get(tag);
    if (slot === undefined) {
      slot = Number(await cluster.cluster('KEYSLOT', `{${tag}}`));
      this.slots.set(tag, slot);
    }
    // The slot's nodes, master first: none listed after it, no replica to wait for.
    const [master, ...replicas] = cluster.slots[slot] ?? [];
    if (!master || replicas.length === 0) return;
    const node = cluster.nodes('master').find((n) => `${n.options.host}:${n.options.port}` === master);
    if (node) await node.wait(1, WAIT_MS);
  }
}
