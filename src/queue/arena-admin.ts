/**
 * Everything about an arena but its leases: its shard layout, limits,
 * dedupe bitmap, holds and pauses, dead letter, stats and deletion, each sent to the
 * shard it concerns or to all of them (src/queue/shards.ts). FairQueue
 * (queue.ts) adds enqueue, dequeue and leases on top.
 */
import { deadAcross, leftOutSmaller, nextCursor, sortByRank, splitCursor, sumArenaStats } from './arena-wide.js';
import { bad, checkFloor, checkInt, checkLimits, checkName } from './checks.js';
import { unlinkNamespace } from './clear.js';
import { QueueArgumentError } from './errors.js';
import { arenaNamespace, layoutKey, shardKey, shardKeys, shardNamespace, validateArenaName } from './keys.js';
import { Layouts } from './layouts.js';
import { LIMITS } from './limits.js';
import { decodeDead, decodeRanks, decodeStats, type StatsReply } from './replies.js';
import { ScriptRunner, type ScriptArg, type ScriptName } from './scripts.js';
import { shardOf, type ShardLayout } from './shards.js';
import type { ArenaStats, DeadItem, FloorRequest, PaceReport, QueueLimit, QueuePage, QueueStats, RedisClient } from './types.js';

export class ArenaAdmin {
  protected readonly scripts: ScriptRunner;
  protected readonly layouts: Layouts;

  constructor(
    protected readonly client: RedisClient,
    readonly prefix: string,
  ) {
    this.scripts = new ScriptRunner(client);
    this.layouts = new Layouts(client, prefix);
  }

  /** Runs a script on one shard (an arena of one shard: tag = the arena). */
  protected run(name: ScriptName, tag: string, args: ScriptArg[]): Promise<unknown> {
    return this.scripts.run(name, shardKeys(this.prefix, tag), args);
  }

  /** The arena's shard layout (one shard unless a kickoff stored more). */
  layout(arena: string): Promise<ShardLayout> {
    validateArenaName(arena);
    return this.layouts.get(arena);
  }

  /**
   * Fixes the arena's shard count, once: `shards` (default 1 on a single
   * Redis, 4 per master on a Cluster) unless it already has a layout, which
   * must then agree (else WEIR_SHARDS_MISMATCH). Call before any queue of
   * the arena is created.
   */
  fixShards(arena: string, shards?: number): Promise<ShardLayout> {
    validateArenaName(arena);
    return this.layouts.fix(arena, shards);
  }

  /** The tag of `queue`'s shard. */
  protected tagOf(layout: ShardLayout, queue: string): string {
    return layout.shards === 1 ? (layout.tags[0] as string) : (layout.tags[shardOf(queue, layout.shards)] as string);
  }

  /** Runs `fn` with the arena's layout; once more with a fresh one when a script says the count has changed. */
  protected async placing<T>(arena: string, fn: (layout: ShardLayout) => Promise<T>): Promise<T> {
    try {
      return await fn(await this.layouts.get(arena));
    } catch (err) {
      if (!(err instanceof QueueArgumentError) || err.code !== 'WEIR_SHARDS_CHANGED') throw err;
      this.layouts.forget(arena);
      return fn(await this.layouts.get(arena));
    }
  }

  /**
   * Creates queues or changes their limits (each kept no faster than its floor
   * and a longer learned pace; one left as it is not written); returns how
   * many were created. `lower`: an existing queue only tightens (a queue
   * several sites share keeps the strictest, however callers race).
   * `floor`: `source` asks the queues for an interval of at least `ms` (0
   * withdraws it); each keeps the longest its sources ask, whatever rates
   * later calls give (Crawl-delays, by origin, that a second kickoff must not undo).
   */
  async setLimits(arena: string, limits: Record<string, QueueLimit>, options: { maxAttempts?: number; lower?: boolean; floor?: FloorRequest } = {}): Promise<number> {
    validateArenaName(arena);
    const maxAttempts = options.maxAttempts === undefined ? '' : checkInt('maxAttempts', options.maxAttempts, 1, LIMITS.maxAttempts);
    const floor = options.floor === undefined ? null : options.lower ? bad('setLimits: lower and floor do not go together') : checkFloor(options.floor);
    const specs = checkLimits(limits);
    return this.placing(arena, async (layout) => {
      // Each shard gets its queues' specs (and maxAttempts, which every shard keeps).
      const byShard = new Map<string, (string | number)[][]>(layout.tags.map((t) => [t, []]));
      for (const spec of specs) byShard.get(this.tagOf(layout, String(spec[0])))?.push(spec);
      let created = 0;
      for (const [tag, mine] of byShard) {
        if (mine.length === 0 && maxAttempts === '') continue;
        for (let i = 0; i === 0 || i < mine.length; i += LIMITS.maxPerCall) {
          const chunk = mine.slice(i, i + LIMITS.maxPerCall);
          created += Number(await this.run('setLimits', tag, [layout.shards, maxAttempts, chunk.length, ...chunk.flat(), ...(options.lower ? ['lower'] : floor !== null ? ['floor', ...floor] : [])]));
        }
      }
      return created;
    });
  }

  /**
   * Gives the arena its dedupe bitmap (allocated now, at full size).
   * Returns false when it already had this one. Bit positions are given in
   * `bits`; an arena of S shards keeps a 1/S part (whole 512-bit blocks) in
   * each, a URL's bits in its queue's shard (position p at p mod the part).
   */
  async configureDedupe(arena: string, config: { bits: number; hashes: number }): Promise<boolean> {
    const layout = await this.layout(arena);
    // (Each shard's part is one Redis string: at most maxDedupeBits.)
    checkInt('bits', config.bits, 512, LIMITS.maxDedupeBits * layout.shards);
    if (config.bits % 512 !== 0) bad('bits must be a multiple of 512');
    checkInt('hashes', config.hashes, 1, LIMITS.maxHashes);
    // (One shard: its part is the whole bitmap, and the script stores no span.)
    const part = Math.ceil(config.bits / layout.shards / 512) * 512;
    let configured = false;
    for (const tag of layout.tags) {
      if (Number(await this.run('configureDedupe', tag, [part, config.hashes, config.bits])) === 1) configured = true;
    }
    return configured;
  }

  /**
   * The arena's dedupe bitmap as configured (bit positions are given in
   * `bits`, the arena-wide size), or null when it has none: a client that
   * computes positions takes these numbers rather than its own, so every
   * client agrees with the arena whatever it would size a bitmap at.
   */
  async dedupeConfig(arena: string): Promise<{ bits: number; hashes: number } | null> {
    const tag = (await this.layout(arena)).tags[0] as string;
    const [bits, hashes, span] = await this.metaFields(tag, 'dedupeBits', 'dedupeHashes', 'dedupeSpan');
    if (bits === null || hashes === null) return null;
    return { bits: Number(span ?? bits), hashes: Number(hashes) };
  }

  /**
   * The dedupe bitmap's fill, per shard: bits set (counted by enqueue as it
   * sets them, so O(1); an arena configured before that count was kept is
   * counted with BITCOUNT, O(size)) of bits.
   */
  async dedupeFill(arena: string): Promise<{ set: number; bits: number }[]> {
    const layout = await this.layout(arena);
    return Promise.all(
      layout.tags.map(async (tag) => {
        const [set, bits] = await this.metaFields(tag, 'dedupeSet', 'dedupeBits');
        return { set: set === null ? await this.client.bitcount(shardKey(this.prefix, tag, 'dedupe')) : Number(set), bits: Number(bits ?? 0) };
      }),
    );
  }

  /**
   * Meta fields of a shard: in its state hash (`queues`, key-schema 3), or
   * in the meta hash of an arena that key-schema 2's scripts wrote and no
   * script of this version has touched yet (lua/includes/meta.lua).
   */
  private async metaFields(tag: string, ...fields: string[]): Promise<(string | null)[]> {
    const state = await this.client.hmget(shardKey(this.prefix, tag, 'queues'), ...fields);
    if (state.some((v) => v !== null)) return state;
    return this.client.hmget(shardKey(this.prefix, tag, 'meta'), ...fields);
  }

  /** How many bits of the arena's dedupe bitmap are set (all shards). */
  async dedupeBitsSet(arena: string): Promise<number> {
    return (await this.dedupeFill(arena)).reduce((sum, s) => sum + s.set, 0);
  }

  /** An operator's stop of one queue, or of the whole arena when `queue` is omitted. Leases out are untouched. */
  async hold(arena: string, queue?: string): Promise<void> {
    await this.setHold(arena, '1', queue);
  }

  async unhold(arena: string, queue?: string): Promise<void> {
    await this.setHold(arena, '0', queue);
  }

  /** A queue's hold goes to its shard; the whole arena's to every shard. */
  private async setHold(arena: string, on: '0' | '1', queue: string | undefined): Promise<void> {
    if (queue !== undefined) checkName('queue name', queue);
    const layout = await this.layout(arena);
    const tags = queue === undefined ? layout.tags : [this.tagOf(layout, queue)];
    for (const tag of tags) await this.run('hold', tag, [on, queue ?? '']);
  }

  /** No dequeue from `queue` for `ms` from now (Redis time); a later end wins. Returns the end, ms since the epoch. */
  async pause(arena: string, queue: string, ms: number): Promise<number> {
    checkName('queue name', queue);
    checkInt('ms', ms, 0, LIMITS.maxDelayMs);
    return Number(await this.run('pause', this.tagOf(await this.layout(arena), queue), [queue, ms, '']));
  }

  /**
   * Tells how a request to `queue`'s site went (`ms` it took, `healthy`:
   * not a 5xx, 429, timeout or failed connection): the queue's interval
   * learns from it, for every caller (lua/pace.lua states the rule).
   * Returns the interval in force, ms (0: none), or null when the queue
   * does not exist.
   */
  async reportPace(arena: string, queue: string, report: PaceReport): Promise<number | null> {
    checkName('queue name', queue);
    const ms = checkInt('ms', Math.round(report.ms), 0, LIMITS.maxDelayMs);
    const { delayFactor, maxDelayMs } = report;
    if (!(delayFactor >= 0 && delayFactor <= 1000)) bad(`delayFactor must be a number in [0, 1000], got ${String(delayFactor)}`);
    checkInt('maxDelayMs', maxDelayMs, 1, LIMITS.maxDelayMs);
    const us = Number(await this.run('pace', this.tagOf(await this.layout(arena), queue), [queue, ms, report.healthy ? '1' : '0', delayFactor, maxDelayMs]));
    return us < 0 ? null : us / 1000;
  }

  /**
   * Drops every item queued in `queue`, at once (its leases and delayed
   * retries end as they would; its limits stay). Returns how many were dropped.
   */
  async purge(arena: string, queue: string): Promise<number> {
    checkName('queue name', queue);
    return Number(await this.run('purge', this.tagOf(await this.layout(arena), queue), [queue]));
  }

  /**
   * Moves the end of a pause this caller set (`pause` returned `end`) to
   * `ms` from now, earlier or later, unless another pause has moved it since.
   * Returns the pause's end now, and whether it was this caller's move (when
   * not, the pause is another's and not to be moved again).
   */
  async repause(arena: string, queue: string, end: number, ms: number): Promise<{ end: number; moved: boolean }> {
    checkName('queue name', queue);
    checkInt('ms', ms, 0, LIMITS.maxDelayMs);
    checkInt('end', end, 0, Number.MAX_SAFE_INTEGER);
    const [now, moved] = (await this.run('pause', this.tagOf(await this.layout(arena), queue), [queue, ms, end])) as [string, number];
    return { end: Number(now), moved: Number(moved) === 1 };
  }

  /** A page of the dead letter, oldest first (with several shards: shard by shard, oldest first in each). */
  async dead(arena: string, options: { offset?: number; count?: number } = {}): Promise<DeadItem[]> {
    const offset = checkInt('offset', options.offset ?? 0, 0, LIMITS.maxOffset);
    const count = checkInt('count', options.count ?? 100, 1, LIMITS.maxPerCall);
    const { tags } = await this.layout(arena);
    const read = async (s: number, off: number, n: number): Promise<DeadItem[]> => decodeDead(await this.run('dead', tags[s] as string, [off, n]));
    if (tags.length === 1) return read(0, offset, count);
    const lengths = await Promise.all(tags.map((t) => this.client.llen(shardKey(this.prefix, t, 'dead'))));
    return deadAcross(lengths, offset, count, read);
  }

  /** Moves up to `count` of the oldest dead items (shard by shard) back to their queues, bypassing dedupe. */
  async requeueDead(arena: string, count: number): Promise<number> {
    checkInt('count', count, 1, Number.MAX_SAFE_INTEGER);
    let moved = 0;
    for (const tag of (await this.layout(arena)).tags) {
      while (moved < count) {
        const n = Number(await this.run('requeueDead', tag, [Math.min(LIMITS.maxPerCall, count - moved)]));
        moved += n;
        if (n === 0) break;
      }
    }
    return moved;
  }

  /** Arena stats, in constant time (per shard). */
  async stats(arena: string): Promise<ArenaStats> {
    const { tags } = await this.layout(arena);
    const parts = await Promise.all(tags.map(async (tag) => (await this.page(tag, 1, 0)).arena));
    return parts.length === 1 ? (parts[0] as ArenaStats) : sumArenaStats(parts);
  }

  /** Per-queue stats, a page at a time (queues in creation order, shard by shard). */
  async queueStats(arena: string, options: { cursor?: number | null; count?: number } = {}): Promise<QueuePage> {
    const count = checkInt('count', options.count ?? 100, 1, LIMITS.maxStatsPage);
    const { tags } = await this.layout(arena);
    const at = splitCursor(checkInt('cursor', options.cursor ?? 1, 1, LIMITS.maxOffset));
    const tag = tags[at.shard];
    if (tag === undefined) bad(`cursor ${String(options.cursor)} names shard ${at.shard}; the arena has ${tags.length}`);
    const r = await this.page(tag, at.qid, count);
    return { queues: r.queues, cursor: nextCursor(at.shard, tags.length, r.cursor) };
  }

  /** Every queue's stats, paging through queueStats (bounded: 500,000 queues). */
  async allQueueStats(arena: string): Promise<QueueStats[]> {
    const all: QueueStats[] = [];
    let cursor: number | null = 1;
    for (let i = 0; cursor !== null && i < 1000; i++) {
      const page = await this.queueStats(arena, { cursor, count: LIMITS.maxStatsPage });
      all.push(...page.queues);
      cursor = page.cursor;
    }
    return all;
  }

  /**
   * The `count` queues with the most URLs queued ('backlog', from each
   * shard's backlog index: no queue is read that is not shown or near it),
   * or those eligible and waiting for a worker longest ('waiting'), across
   * every shard. `exact` is false when a shard's index bucket was read in
   * part and a queue it left out may be bigger than the last shown (though
   * below the bucket's bound: lua/stats.lua). Null when a shard holds queues
   * made before the index: page through queueStats instead.
   */
  async busiestQueues(arena: string, by: 'backlog' | 'waiting', count: number, offset = 0): Promise<{ queues: QueueStats[]; exact: boolean } | null> {
    checkInt('count', count, 1, LIMITS.maxStatsPage);
    checkInt('offset', offset, 0, LIMITS.maxStatsRank - count);
    if (offset > 0) return this.busiestPage(arena, by, count, offset);
    const { tags } = await this.layout(arena);
    const parts = await Promise.all(tags.map(async (tag) => decodeStats(await this.run('stats', tag, [by === 'backlog' ? 'top' : 'waiting', count]))));
    if (parts.some((p) => p.exact < 0)) return null;
    const all = parts.flatMap((p) => p.queues);
    sortByRank(all, by, (q) => (by === 'backlog' ? q.queued : q.nextEligibleAt));
    const shown = all.slice(0, count);
    return { queues: shown, exact: by === 'waiting' || leftOutSmaller(parts, shown.length < count ? 0 : (shown.at(-1)?.queued ?? 0)) };
  }

  /**
   * A page of the busiest below the first (ranks offset..offset+count): each
   * shard's names and rank keys down to that rank, merged and cut as the
   * first page is, then those rows read by name (their counts a moment
   * later than their ranks).
   */
  private async busiestPage(arena: string, by: 'backlog' | 'waiting', count: number, offset: number): Promise<{ queues: QueueStats[]; exact: boolean } | null> {
    const { tags } = await this.layout(arena);
    const parts = await Promise.all(tags.map(async (tag) => decodeRanks(await this.run('stats', tag, [by === 'backlog' ? 'top' : 'waiting', offset + count, 'ranks']))));
    if (parts.some((p) => p.exact < 0)) return null;
    const ranked = sortByRank(parts.flatMap((p) => p.ranks), by, (r) => r.key).slice(offset, offset + count);
    const rows = new Map((await this.namedQueueStats(arena, ranked.map((r) => r.name))).map((q) => [q.name, q]));
    const queues = ranked.flatMap((r) => rows.get(r.name) ?? []);
    return { queues, exact: by === 'waiting' || leftOutSmaller(parts, ranked.length < count ? 0 : (ranked.at(-1)?.key ?? 0)) };
  }

  /** The stats of the queues named (those that exist), each read on its own shard. */
  async namedQueueStats(arena: string, names: readonly string[]): Promise<QueueStats[]> {
    if (names.length > LIMITS.maxStatsPage) bad(`at most ${LIMITS.maxStatsPage} names`);
    for (const name of names) checkName('queue name', name);
    const layout = await this.layout(arena);
    const byTag = new Map<string, string[]>();
    for (const name of names) {
      const tag = this.tagOf(layout, name);
      byTag.set(tag, [...(byTag.get(tag) ?? []), name]);
    }
    const parts = await Promise.all([...byTag].map(async ([tag, mine]) => decodeStats(await this.run('stats', tag, ['names', ...mine])).queues));
    return parts.flat();
  }

  private async page(tag: string, cursor: number, count: number): Promise<StatsReply> {
    return decodeStats(await this.run('stats', tag, [cursor, count]));
  }

  /**
   * The name of a key of the arena's own, for data kept beside the queue
   * (a crawler's robots.txt cache, say): the arena's prefix and hash tag, so
   * it lives in the arena's Cluster slot and `clear` deletes it too.
   */
  key(arena: string, name: string): string {
    return arenaNamespace(this.prefix, arena) + name;
  }

  /**
   * Deletes every key of the arena, the queue's and those made with key(),
   * in bounded batches, every shard's, the first shard's (with the layout)
   * last. Returns how many.
   */
  async clear(arena: string): Promise<number> {
    const { tags } = await this.layout(arena);
    let deleted = 0;
    for (const tag of tags.slice(1)) deleted += await unlinkNamespace(this.client, shardNamespace(this.prefix, tag));
    deleted += await unlinkNamespace(this.client, arenaNamespace(this.prefix, arena));
    this.layouts.forget(arena);
    return deleted;
  }

  /** Deletes the queue's own keys of the arena, every shard's and its layout (UNLINK: Redis frees big keys in the background). */
  async destroy(arena: string): Promise<void> {
    const { tags } = await this.layout(arena);
    for (const tag of tags) await this.client.unlink(...shardKeys(this.prefix, tag));
    await this.client.unlink(layoutKey(this.prefix, arena));
    this.layouts.forget(arena);
  }
}
