/**
 * Shards: an arena split over several hash tags, so that on Redis Cluster
 * its queues spread over several nodes. Each shard is a whole arena key
 * block (lua/includes/keys.lua) under its own tag, holding its queues'
 * schedule, items, leases, retries, wake list and part of the dedupe bitmap;
 * a queue lives in exactly one shard, chosen by a stable hash of its name, so
 * its rate, in-flight cap and fair turn are still decided by one script on
 * one node. Shard 0's tag is the arena's own name: an arena of one shard is
 * laid out exactly as before shards existed.
 */
import { QueueArgumentError } from './errors.js';
import { validateArenaName } from './keys.js';
import { LIMITS } from './limits.js';

const MAX_SHARDS = LIMITS.maxShards;

/** An arena's shards: their count and each one's hash tag, shard 0 first. */
export interface ShardLayout {
  readonly shards: number;
  readonly tags: readonly string[];
  /** False for an arena with no stored layout: one shard, until a kickoff stores one. */
  readonly stored: boolean;
}

export function singleShard(arena: string): ShardLayout {
  return { shards: 1, tags: [arena], stored: false };
}

const encoder = new TextEncoder();

/**
 * The shard a queue (a crawler's domain) belongs to: FNV-1a over the name's
 * UTF-8 bytes, finished with murmur3's fmix32 (FNV's low bits alone spread
 * similar names poorly), modulo the shard count. Never change it: stored
 * arenas depend on it, and test/queue/shards.test.ts holds a fixed table.
 */
export function shardOf(queue: string, shards: number): number {
  let h = 0x811c9dc5;
  for (const byte of encoder.encode(queue)) {
    h ^= byte;
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return (h >>> 0) % shards;
}

/** Shard i's tag is `<arena>~<i>`, or `<arena>~<i>~<n>` when a suffix placed it on the wanted Cluster node; shard 0's is the arena. */
const TAG = /^~\d{1,4}(~\d{1,6})?$/;

export function checkShardCount(shards: unknown): number {
  if (typeof shards !== 'number' || !Number.isInteger(shards) || shards < 1 || shards > MAX_SHARDS) {
    throw new QueueArgumentError('WEIR_BAD_ARGS', `shards must be an integer 1..${MAX_SHARDS}, got ${JSON.stringify(shards)}`);
  }
  return shards;
}

/** The stored form: JSON {v: 1, shards, tags}. */
export function formatLayout(layout: ShardLayout): string {
  return JSON.stringify({ v: 1, shards: layout.shards, tags: layout.tags });
}

/** A stored layout, checked: a damaged one is an error, never a guess (a wrong shard count would misplace queues). */
export function parseLayout(arena: string, raw: string): ShardLayout {
  validateArenaName(arena);
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    parsed = null;
  }
  const p = parsed as { v?: unknown; shards?: unknown; tags?: unknown } | null;
  const tags = p?.tags;
  const ok =
    p !== null &&
    p.v === 1 &&
    Array.isArray(tags) &&
    tags.length === p.shards &&
    tags[0] === arena &&
    tags.slice(1).every((t) => typeof t === 'string' && t.startsWith(arena) && TAG.test(t.slice(arena.length)));
  if (!ok) throw new QueueArgumentError('WEIR_SCHEMA', `arena ${arena} has a shard layout this version cannot read: ${raw.slice(0, 200)}`);
  return { shards: checkShardCount(p.shards), tags: tags as string[], stored: true };
}
