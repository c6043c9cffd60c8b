import { Cluster, type Redis } from 'ioredis';
import { DEFAULTS } from '../queue/index.js';
import { crawlKeys } from './keys.js';

/**
 * Deletes every key of an arena (queue and crawler keys alike) in bounded
 * batches: SCAN with the arena's pattern (never KEYS), or on a cluster
 * CLUSTER GETKEYSINSLOT on the arena's one slot; UNLINK frees big keys in
 * the background. Returns how many keys were deleted.
 */
export async function clearArena(redis: Redis | Cluster, arena: string, prefix: string = DEFAULTS.prefix): Promise<number> {
  const pattern = crawlKeys(arena, prefix).pattern;
  let deleted = 0;
  if (redis instanceof Cluster) {
    const slot = Number(await redis.cluster('KEYSLOT', `${prefix}:{${arena}}:x`));
    for (let i = 0; i < 1_000_000; i++) {
      const keys = (await redis.cluster('GETKEYSINSLOT', slot, 1000));
      const ours = keys.filter((k) => k.startsWith(`${prefix}:{${arena}}:`));
      if (ours.length === 0) break;
      deleted += await redis.unlink(...ours);
    }
    return deleted;
  }
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern.replace(/[[\]?]/g, '\\$&'), 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) deleted += await redis.unlink(...keys);
  } while (cursor !== '0');
  return deleted;
}
