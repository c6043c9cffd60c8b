/**
 * Where an arena's shards are: the stored layout (one key beside the
 * arena's, `<prefix>:{<arena>}:layout`), read once per process and kept.
 * An arena without one has one shard; that answer is re-read at most every
 * PROVISIONAL_MS, so a process started before a kickoff that stores several
 * shards finds them soon, and the scripts that place queues refuse a caller
 * whose shard count is not the arena's (WEIR_SHARDS_CHANGED: it re-reads).
 */
import { Cluster } from 'ioredis';
import { QueueArgumentError } from './errors.js';
import { layoutKey, shardKey } from './keys.js';
import { checkShardCount, formatLayout, parseLayout, singleShard, type ShardLayout } from './shards.js';
import type { RedisClient } from './types.js';

const PROVISIONAL_MS = 1000;

/** Shards per master by default on a Cluster: a node's share can then move in quarters (CLUSTER SETSLOT) without re-sharding. */
export const SHARDS_PER_MASTER = 4;

export class Layouts {
  private readonly known = new Map<string, { layout: Promise<ShardLayout>; readAt: number }>();

  constructor(
    private readonly client: RedisClient,
    private readonly prefix: string,
  ) {}

  private key(arena: string): string {
    return layoutKey(this.prefix, arena);
  }

  /** The arena's layout (from this process's memory once stored). */
  get(arena: string): Promise<ShardLayout> {
    const hit = this.known.get(arena);
    if (hit && (hit.readAt < 0 || performance.now() - hit.readAt < PROVISIONAL_MS)) return hit.layout;
    const layout = this.read(arena);
    const entry = { layout, readAt: performance.now() };
    this.known.set(arena, entry);
    layout.then(
      (l) => {
        if (l.stored) entry.readAt = -1;
      },
      () => this.known.delete(arena),
    );
    return layout;
  }

  /** Forgets what was read (after WEIR_SHARDS_CHANGED, or a clear). */
  forget(arena: string): void {
    this.known.delete(arena);
  }

  private async read(arena: string): Promise<ShardLayout> {
    const raw = await this.client.get(this.key(arena));
    return raw === null ? singleShard(arena) : parseLayout(arena, raw);
  }

  /**
   * Fixes the arena's shard count (a kickoff's job): stores a layout of
   * `shards` (default: 1 on a single Redis, SHARDS_PER_MASTER per master on
   * a Cluster) unless it has one. A different count than the stored one,
   * or than an arena that holds data from before layouts (one shard), is a
   * WEIR_SHARDS_MISMATCH error: moving queues between shards is not done
   * silently.
   */
  async fix(arena: string, shards?: number): Promise<ShardLayout> {
    if (shards !== undefined) checkShardCount(shards);
    this.forget(arena);
    const have = await this.get(arena);
    const legacy = !have.stored && (await this.client.hexists(shardKey(this.prefix, arena, 'meta'), 'v')) === 1;
    if (have.stored || legacy) {
      if (shards !== undefined && shards !== have.shards) throw mismatch(arena, have.shards, shards);
      // (Again: a kickoff stopped between the layout and these is finished by the next.)
      if (have.stored) await this.markShards(have);
      return have;
    }
    const count = shards ?? (this.client instanceof Cluster ? SHARDS_PER_MASTER * this.client.nodes('master').length : 1);
    const layout: ShardLayout = { shards: count, tags: await chooseTags(this.client, arena, count), stored: true };
    const set = await this.client.set(this.key(arena), formatLayout(layout), 'NX');
    this.forget(arena);
    if (set === null) {
      // Another kickoff stored one first: it holds if it agrees.
      const theirs = await this.get(arena);
      if (theirs.shards !== count) throw mismatch(arena, theirs.shards, count);
      return theirs;
    }
    await this.markShards(layout);
    return layout;
  }

  /**
   * Each shard's meta fields (in its state hash: lua/includes/keys.lua) say
   * the count, so a script never places a queue for a
   * caller with another (one that read no layout: the arena's queues are
   * created after this, by the same kickoff).
   */
  private async markShards(layout: ShardLayout): Promise<void> {
    for (const tag of layout.tags) await this.client.hset(shardKey(this.prefix, tag, 'queues'), 'shards', String(layout.shards));
  }
}

function mismatch(arena: string, have: number, asked: number): QueueArgumentError {
  return new QueueArgumentError(
    'WEIR_SHARDS_MISMATCH',
    `arena ${arena} has ${have} shard${have === 1 ? '' : 's'} (fixed when it was first seeded), not ${asked}: drop the seed's shards field, or clear the arena to start over with ${asked}`,
  );
}

/**
 * Tags for shards 1..S-1. On a Cluster each is chosen (a numeric suffix,
 * tried in order) so that the shards go round the masters in turn from the
 * one that holds shard 0, whatever CRC16 makes of the names: each master
 * carries S/M shards, not a lottery's share.
 */
async function chooseTags(client: RedisClient, arena: string, shards: number): Promise<string[]> {
  const tags = [arena];
  if (!(client instanceof Cluster)) {
    for (let i = 1; i < shards; i++) tags.push(`${arena}~${i}`);
    return tags;
  }
  const owner = await slotOwners(client);
  const slotOf = async (tag: string): Promise<number> => Number(await client.cluster('KEYSLOT', `{${tag}}`));
  const masters = [...new Set(owner)].sort();
  const first = masters.indexOf(owner[await slotOf(arena)] ?? '');
  for (let i = 1; i < shards; i++) {
    const want = masters[(first + i) % masters.length];
    let tag = `${arena}~${i}`;
    for (let n = 1; n <= 10_000 && owner[await slotOf(tag)] !== want; n++) tag = `${arena}~${i}~${n}`;
    tags.push(tag);
  }
  return tags;
}

/** Slot → its master's id, from CLUSTER SLOTS. */
async function slotOwners(client: Cluster): Promise<string[]> {
  const ranges = (await client.cluster('SLOTS')) as unknown as [number, number, [string, number, string?]][];
  const owner: string[] = [];
  for (const [from, to, master] of ranges) for (let s = from; s <= to; s++) owner[s] = master[2] ?? `${master[0]}:${master[1]}`;
  return owner;
}
