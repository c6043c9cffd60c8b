import { Cluster } from 'ioredis';
import type { RedisClient } from './types.js';

/**
 * Deletes every key that starts with `namespace` (an arena's `weir:{A}:`) in
 * bounded batches: SCAN with the pattern (never KEYS), or on a cluster
 * CLUSTER GETKEYSINSLOT on the arena's one slot; UNLINK frees big keys in
 * the background. Returns how many keys were deleted.
 */
export async function unlinkNamespace(client: RedisClient, namespace: string): Promise<number> {
  let deleted = 0;
  if (client instanceof Cluster) {
    const slot = Number(await client.cluster('KEYSLOT', `${namespace}x`));
    for (let i = 0; i < 1_000_000; i++) {
      const keys = await client.cluster('GETKEYSINSLOT', slot, 1000);
      const ours = keys.filter((k) => k.startsWith(namespace));
      if (ours.length === 0) break;
      deleted += await client.unlink(...ours);
    }
    return deleted;
  }
  let cursor = '0';
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', `${namespace.replace(/[[\]?*\\]/g, '\\$&')}*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) deleted += await client.unlink(...keys);
  } while (cursor !== '0');
  return deleted;
}
