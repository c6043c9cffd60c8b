import { QueueArgumentError } from './errors.js';

/**
 * The arena key block: the 13 keys every script receives, in the order
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
  return `${prefix}:{${arena}}:`;
}

export function arenaKeys(prefix: string, arena: string): string[] {
  const ns = arenaNamespace(prefix, arena);
  return ARENA_KEY_NAMES.map((k) => ns + k);
}

export function arenaKey(prefix: string, arena: string, name: ArenaKeyName): string {
  return arenaNamespace(prefix, arena) + name;
}
