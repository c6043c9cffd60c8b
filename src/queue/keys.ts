import { QueueArgumentError } from './errors.js';

/**
 * The arena key block: the 14 keys every script receives, in the order
 * lua/includes/keys.lua documents them. All share the hash tag `{arena}`, so
 * an arena lives in one Redis Cluster slot and arenas never share a key.
 */
export const ARENA_KEY_NAMES = [
  'meta',
  'queues',
  'qids',
  'items',
  'ready',
  'sched',
  'leases',
  'lexp',
  'delayed',
  'delaydata',
  'dead',
  'wake',
  'dedupe',
  'backlog',
] as const;

export type ArenaKeyName = (typeof ARENA_KEY_NAMES)[number];

const ARENA_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

export function validateArenaName(arena: string): void {
  if (typeof arena !== 'string' || !ARENA_NAME.test(arena)) {
    throw new QueueArgumentError(
      'WEIR_BAD_NAME',
      `arena name must be 1-64 letters, digits, '_', '.' or '-', got ${JSON.stringify(arena)}`,
    );
  }
}

/** What every key of the arena starts with: `<prefix>:{<arena>}:`. */
export function arenaNamespace(prefix: string, arena: string): string {
  validateArenaName(arena);
  return shardNamespace(prefix, arena);
}

/** What every key of one shard starts with: `<prefix>:{<tag>}:` (shard 0's tag is the arena's name). */
export function shardNamespace(prefix: string, tag: string): string {
  return `${prefix}:{${tag}}:`;
}

/** Where an arena's shard layout is stored (src/queue/layouts.ts), beside shard 0's keys. */
export function layoutKey(prefix: string, arena: string): string {
  return `${arenaNamespace(prefix, arena)}layout`;
}

export function arenaKeys(prefix: string, arena: string): string[] {
  validateArenaName(arena);
  return shardKeys(prefix, arena);
}

/**
 * The key block of one shard of an arena (src/queue/shards.ts): the same
 * names under the shard's tag, `<prefix>:{<tag>}:`. Shard 0's tag is the
 * arena's name. Tags come from a checked layout, so are not checked here.
 */
export function shardKeys(prefix: string, tag: string): string[] {
  const ns = shardNamespace(prefix, tag);
  return ARENA_KEY_NAMES.map((k) => ns + k);
}

export function shardKey(prefix: string, tag: string, name: ArenaKeyName): string {
  return shardNamespace(prefix, tag) + name;
}

export function arenaKey(prefix: string, arena: string, name: ArenaKeyName): string {
  return arenaNamespace(prefix, arena) + name;
}
